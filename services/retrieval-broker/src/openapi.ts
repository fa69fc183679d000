import { z } from 'zod';
import {
  AddDelegationRequest, AddGrantRequest, DelegationCreatedResponse, DeletionAccepted, DeletionJob, EvidencePacket,
  GrantCreatedResponse, IssueCapabilityRequest, IssueCapabilityResponse, LegalHold, LegalHoldCreatedResponse, MemoryRecord,
  MutationResponse, PacketValidation, PlaceLegalHoldRequest, PolicyActionRequest, PolicyRevisionResponse, Problem, ReceiptPublicKey, ReceiptResponse,
  AsyncWriteAccepted, CommandStatusResponse, RecordHistory, LIMITS, SearchRequest, SubjectSummaries, VersionedRequest, WriteMemoryBatchItem, WriteMemoryBatchResponse, WriteMemoryRequest,
} from '@gm/contracts';

const schema = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' });
const json = (s: z.ZodType) => ({ 'application/json': { schema: schema(s) } });
const problem = { description: 'problem+json (RFC 9457)', content: { 'application/problem+json': { schema: schema(Problem) } } };
const ok = (status: string, s: z.ZodType, description: string) => ({ [status]: { description, content: json(s) } });
/** A mutation's answer: its body plus whether read-your-writes was confirmed (command-gateway.ts). */
const mutation = (status: string, s: z.ZodType, description: string) => ({
  [status]: {
    description,
    content: json(s),
    headers: {
      'Read-Your-Writes': {
        description: '`confirmed`: the projections folded the result, so the next read sees it; `pending`: accepted and durable, but the wait for the projections ran out first',
        schema: { type: 'string', enum: ['confirmed', 'pending'] },
      },
      'Consistency-Token': {
        description: 'where this mutation (and the token the request sent) landed in the log; a read that sends it waits until the projections passed it',
        schema: { type: 'string' },
      },
    },
  },
});
const bearer = [{ capability: [] }];
/** Sent on a read: wait until the projections passed it (then 503 MEM_NOT_YET_CONSISTENT); on a mutation: carried into its answer's token. */
const preferAsync = { name: 'Prefer', in: 'header', required: false, schema: { type: 'string', examples: ['respond-async'] } };
const consistencyToken = { name: 'Consistency-Token', in: 'header', required: false, schema: { type: 'string' } };

/** OpenAPI 3.1 generated from the same zod schemas the handlers validate with. */
export function openApiDocument() {
  const op = (summary: string, action: string, responses: object, requestBody?: z.ZodType) => ({
    summary: `${summary} (action: ${action})`,
    security: action === 'issuer' ? [{ issuer: [] }] : bearer,
    ...(requestBody ? { requestBody: { required: true, content: json(requestBody) } } : {}),
    responses: { ...responses, default: problem },
  });
  const idParam = (name: string) => [{ name, in: 'path', required: true, schema: { type: 'string' } }];
  return {
    openapi: '3.1.0',
    info: { title: 'Governed memory API', version: '1.0.0' },
    components: {
      securitySchemes: {
        capability: { type: 'http', scheme: 'bearer', bearerFormat: 'JWS (EdDSA) capability' },
        issuer: { type: 'http', scheme: 'bearer', description: 'issuer credential' },
      },
    },
    paths: {
      '/v1/capabilities': { post: op('Issue a capability', 'issuer', ok('201', IssueCapabilityResponse, 'issued'), IssueCapabilityRequest) },
      '/v1/memories': {
        post: {
          ...op('Write a memory', 'write', {
            ...mutation('201', MutationResponse, 'admitted'),
            ...mutation('202', AsyncWriteAccepted, 'with `Prefer: respond-async`: the command is durably in the log; its outcome at /v1/commands/{commandId}'),
          }, WriteMemoryRequest),
          parameters: [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } }, consistencyToken, preferAsync],
        },
      },
      '/v1/memories:batch': {
        parameters: [consistencyToken, preferAsync],
        post: op(
          `Write up to ${LIMITS.maxBatchItems} memories; each item passes or fails on its own, as POST /v1/memories would answer it`,
          'write',
          {
            ...mutation('200', WriteMemoryBatchResponse, 'every item\'s outcome, at its index'),
            ...mutation('202', WriteMemoryBatchResponse, 'with `Prefer: respond-async`: each accepted item\'s commandId (httpStatus 202), each refused item\'s problem'),
          },
          // The handler checks the envelope first and each item on its own; documented as items of the write body.
          z.object({ items: z.array(WriteMemoryBatchItem).min(1).max(LIMITS.maxBatchItems) }).strict(),
        ),
      },
      '/v1/commands/{commandId}': {
        parameters: idParam('commandId'),
        get: op('How far an asynchronous write got (only its principal may ask)', 'write', ok('200', CommandStatusResponse, 'pending, accepted or rejected')),
      },
      '/v1/memories/{id}': {
        parameters: [...idParam('id'), consistencyToken],
        get: op('Read a memory', 'read', ok('200', MemoryRecord, 'the record: active, or superseded by a correction (`status: superseded`, `supersededById`)')),
        delete: op('Delete a memory', 'request_delete', mutation('202', DeletionAccepted, 'deletion job accepted')),
      },
      '/v1/memories/{id}/history': {
        parameters: [...idParam('id'), consistencyToken],
        get: op('Read the versions and supersession chain of a memory, metadata only', 'read', ok('200', RecordHistory, 'the versions and the chain this reader may see')),
      },
      '/v1/memories/{id}/promote': {
        parameters: idParam('id'),
        post: op('Promote a quarantined memory or widen its visibility', 'promote', mutation('200', MutationResponse, 'promoted'), VersionedRequest),
      },
      '/v1/memories/{id}/reject': {
        parameters: idParam('id'),
        post: op('Reject a quarantined memory', 'review', mutation('200', MutationResponse, 'tombstoned'), VersionedRequest),
      },
      '/v1/search': { post: { ...op('Search', 'search', ok('200', EvidencePacket, 'evidence packet'), SearchRequest), parameters: [consistencyToken] } },
      '/v1/packets/{id}/validate': { parameters: idParam('id'), post: op('Validate a packet before acting', 'cite', ok('200', PacketValidation, 'validity')) },
      '/v1/subjects/{subjectId}/summary': {
        parameters: [...idParam('subjectId'), consistencyToken],
        get: op('Extractive summaries of a subject in the caller\'s partitions, for its purpose', 'search', ok('200', SubjectSummaries, 'summaries (possibly none)')),
      },
      '/v1/subjects/{subjectId}/forget': { parameters: idParam('subjectId'), post: op('Forget a subject', 'request_delete', mutation('202', DeletionAccepted, 'deletion job accepted')) },
      '/v1/deletion-jobs/{id}': { parameters: idParam('id'), get: op('Deletion job', 'admin or requester', ok('200', DeletionJob, 'job')) },
      '/v1/deletion-jobs/{id}/receipt': {
        parameters: idParam('id'),
        get: op('Signed deletion receipt (404 until the job finished and was signed); Accept: application/jose for the bare JWS', 'admin or requester',
          { '200': { description: 'receipt', content: { ...json(ReceiptResponse), 'application/jose': { schema: { type: 'string' } } } } }),
      },
      '/v1/receipt-keys': {
        get: { summary: 'Public keys (JWKS) that sign deletion receipts; no capability needed', responses: ok('200', z.object({ keys: z.array(ReceiptPublicKey) }), 'JWKS') },
      },
      '/v1/review/quarantine': { get: op('Quarantined memories to review', 'review', ok('200', z.object({ items: z.array(MemoryRecord) }), 'records')) },
      '/v1/grants': { post: op('Add a grant (resource in the capability\'s scopes)', 'admin', ok('201', GrantCreatedResponse, 'applied'), AddGrantRequest) },
      '/v1/grants/{id}': { parameters: idParam('id'), delete: op('Remove a grant', 'admin', ok('202', PolicyRevisionResponse, 'applied')) },
      '/v1/delegations': {
        post: op('Delegate to an agent (the delegator is the capability\'s principal)', 'admin, or the principal\'s own capability', ok('201', DelegationCreatedResponse, 'applied'), AddDelegationRequest),
      },
      '/v1/delegations/{id}/revoke': {
        parameters: idParam('id'),
        post: op('Revoke a delegation', 'admin, or the delegator', ok('202', PolicyRevisionResponse, 'applied'), PolicyActionRequest),
      },
      '/v1/capabilities/{jti}/revoke': {
        parameters: idParam('jti'),
        post: op('Revoke a capability until it expires', 'revoke, or the caller\'s own', ok('202', PolicyRevisionResponse, 'applied'), PolicyActionRequest),
      },
      '/v1/agents/{id}/revoke': { parameters: idParam('id'), post: op('Revoke an agent', 'admin', ok('202', PolicyRevisionResponse, 'applied'), PolicyActionRequest) },
      '/v1/legal-holds': {
        post: op('Place a legal hold on a subject', 'admin', ok('201', LegalHoldCreatedResponse, 'applied'), PlaceLegalHoldRequest),
        get: op('Legal holds of the tenant', 'admin', ok('200', z.object({ items: z.array(LegalHold) }), 'holds')),
      },
      '/v1/legal-holds/{id}': { parameters: idParam('id'), delete: op('Release a legal hold', 'admin', ok('202', PolicyRevisionResponse, 'applied')) },
      '/healthz': { get: { summary: 'Liveness', responses: { '200': { description: 'alive' } } } },
      '/readyz': { get: { summary: 'Readiness', responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } } } },
      '/metrics': { get: { summary: 'Prometheus metrics', responses: { '200': { description: 'text exposition' } } } },
    },
  };
}
