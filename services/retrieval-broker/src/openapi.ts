import { DeletionJobListQuery, DeletionScope, QuarantineQuery, LIMITS } from '@gm/contracts';
import { RUNTIME_PROOF_PATH, RuntimeProofNonce } from '@gm/config';
import { API_REFERENCE_PATH } from './api-reference.ts';
import {
  BODY_INVALID, CAPABILITY, IDEMPOTENCY, INTERNAL, ISSUER, NOT_YET_AVAILABLE, NOT_YET_CONSISTENT, RECORD_NOT_FOUND, REPLY_TIMEOUT, REVIEW_DECISION,
  TOKEN, WRITE_DECISION, WRITE_EDGE, NOT_ADMIN, capability, notFound,
} from './openapi-failures.ts';
import { STATUS_OF } from './problem.ts';
import {
  ASYNC_HEADERS, BACKLOG, JOB_LINK, type Operation, READ_LINK, RECORD_LINKS, SCHEMAS, SERVED, adminOnly, answer, assemble, consistencyToken,
  idempotencyKey, json, jsonSchema, link, mutation, pathId, preferWrite, text, writeMutation,
} from './openapi-builders.ts';
import { ADMINISTRATION_PATHS } from './openapi-administration.ts';

/*
 * OpenAPI 3.1, generated from the same zod schemas the handlers validate with. Every operation
 * declares every status it can answer (openapi-failures.ts), and no `default`:
 * test/e2e/openapi.e2e.spec.ts calls each one with bad input and fails on any other status.
 */

const PATHS: Record<string, Partial<Record<'get' | 'post' | 'delete', Operation>>> = {
  '/v1/capabilities': {
    post: {
      operationId: 'issueCapability', tag: 'capabilities', summary: 'Issue a capability',
      body: { schema: 'IssueCapabilityRequest', required: true, examples: ['issueCapabilityRequest'] },
      responses: answer('201', {
        schema: 'IssueCapabilityResponse', description: 'issued (at most 15 minutes)', examples: ['issueCapabilityResponse'],
        links: { revoke: link('revokeCapability', 'jti', 'jti', 'revoke it before it expires') },
      }),
      failures: [ISSUER, BODY_INVALID, ...SERVED],
    },
  },
  '/v1/memories': {
    post: {
      operationId: 'writeMemory', tag: 'memories', summary: 'Write a memory',
      parameters: [idempotencyKey, consistencyToken, preferWrite],
      body: { schema: 'WriteMemoryRequest', required: true, examples: ['writeRequest', 'writeUntrustedRequest'] },
      responses: {
        ...writeMutation('201', { schema: 'MutationResponse', description: 'admitted: `active`, or `quarantined` when untrusted', examples: ['writeResponse'], links: RECORD_LINKS }),
        ...answer('202', {
          schema: 'AsyncWriteAccepted', description: 'with `Prefer: respond-async`: the command is durably in the log; its outcome at /v1/commands/{commandId}',
          examples: ['asyncWriteResponse'], headers: ASYNC_HEADERS, links: { outcome: link('getCommand', 'commandId', 'commandId', 'how far the write got') },
        }),
      },
      failures: [
        ...capability('write'), TOKEN, BODY_INVALID,
        { ...BODY_INVALID, when: 'an `embedding` this runtime cannot keep: from another model or of another size than the runtime\'s, a zero vector, or any on a runtime without vectors; nothing is written' },
        ...IDEMPOTENCY, ...WRITE_EDGE, ...WRITE_DECISION, REPLY_TIMEOUT, BACKLOG, ...SERVED,
      ],
      problemExamples: { 422: 'writeInvalid' },
    },
  },
  '/v1/memories:batch': {
    post: {
      operationId: 'writeMemories', tag: 'memories',
      summary: `Write up to ${LIMITS.maxBatchItems} memories; each item passes or fails on its own, as POST /v1/memories would answer it`,
      parameters: [consistencyToken, preferWrite],
      body: { schema: 'WriteMemoryBatchRequest', required: true, examples: ['batchRequest'], description: `at most 16 × MEMORY_BODY_LIMIT_BYTES` },
      responses: {
        ...writeMutation('200', {
          schema: 'WriteMemoryBatchResponse', description: 'every item\'s outcome, at its index (its httpStatus and problem are the single write\'s)', examples: ['batchResponse'],
          links: { first: link('getMemory', 'id', 'items/0/id', 'read the first item\'s record') },
        }),
        ...answer('202', {
          schema: 'WriteMemoryBatchResponse', headers: ASYNC_HEADERS,
          description: 'with `Prefer: respond-async`: each accepted item\'s commandId (httpStatus 202), each refused item\'s problem',
        }),
      },
      failures: [
        ...capability('write'), TOKEN, { ...BODY_INVALID, when: `the envelope is not \`{items}\` with 1–${LIMITS.maxBatchItems} entries; nothing is written` },
        BACKLOG, ...SERVED,
      ],
    },
  },
  '/v1/commands/{commandId}': {
    get: {
      operationId: 'getCommand', tag: 'memories', summary: 'How far an asynchronous write got (only its principal may ask)',
      parameters: [pathId('commandId', 'the commandId a 202 answered')],
      responses: answer('200', {
        schema: 'CommandStatusResponse', description: '`pending`, `accepted` (with the record) or `rejected` (with the problem the synchronous write would have answered)',
        examples: ['commandResponse'], links: { read: link('getMemory', 'id', 'id', 'read the record once accepted') },
      }),
      failures: [...capability('write'), notFound('no command with this id written by this principal: unknown, another principal\'s, older than 24 hours, or not an id — alike'), ...SERVED],
    },
  },
  '/v1/memories/{id}': {
    get: {
      operationId: 'getMemory', tag: 'memories', summary: 'Read a memory',
      parameters: [pathId('id', 'the record\'s id'), consistencyToken],
      responses: answer('200', {
        schema: 'MemoryRecord', examples: ['record'], links: RECORD_LINKS,
        description: 'the record: active, or superseded by a correction (`status: superseded`, `supersededById`)',
      }),
      failures: [...capability('read'), TOKEN, NOT_YET_CONSISTENT, RECORD_NOT_FOUND, ...SERVED],
      problemExamples: { 404: 'recordNotFound' },
    },
    delete: {
      operationId: 'deleteMemory', tag: 'deletion', summary: 'Delete a memory',
      parameters: [
        pathId('id', 'the record\'s id'),
        {
          name: 'scope', in: 'query', required: false, schema: jsonSchema(DeletionScope),
          description: '`record` (default): the record and what was derived from it; other records of the subject with the same content are named in the receipt as `residual`. `content`: also every such record this capability may delete, in the same job',
        },
        idempotencyKey, consistencyToken,
      ],
      responses: mutation('202', { schema: 'DeletionAccepted', description: 'the deletion job (an earlier one, if the record is already being deleted)', examples: ['deletionAccepted'], links: JOB_LINK }),
      failures: [
        ...capability('request_delete'), TOKEN, RECORD_NOT_FOUND, ...IDEMPOTENCY, REPLY_TIMEOUT,
        { status: STATUS_OF.MEM_VALIDATION, code: 'MEM_VALIDATION', when: '`scope` is neither `record` nor `content`, or given twice' },
        { status: STATUS_OF.MEM_CONFLICT, code: 'MEM_CONFLICT', when: 'a revocation of this record is in progress; retry once it completes (retriable)' },
        notFound('the record was purged meanwhile'), ...SERVED,
      ],
    },
  },
  '/v1/memories/{id}/history': {
    get: {
      operationId: 'getMemoryHistory', tag: 'memories', summary: 'Read the versions and supersession chain of a memory, metadata only',
      parameters: [pathId('id', 'the record\'s id'), consistencyToken],
      responses: answer('200', { schema: 'RecordHistory', description: 'the versions and the chain this reader may see; a record a reviewer rejected answers those who may review it, its last version naming the `rejection` and its reason code', examples: ['history'] }),
      failures: [...capability('read'), TOKEN, NOT_YET_CONSISTENT, RECORD_NOT_FOUND, ...SERVED],
    },
  },
  '/v1/memories/{id}/promote': {
    post: {
      operationId: 'promoteMemory', tag: 'review', summary: 'Promote a quarantined memory or widen its visibility',
      parameters: [pathId('id', 'the record\'s id'), idempotencyKey, consistencyToken],
      body: { schema: 'PromoteRequest', required: true, examples: ['promoteRequest'] },
      responses: mutation('200', { schema: 'MutationResponse', description: 'promoted: active and verified', examples: ['promoteResponse'], links: { read: READ_LINK } }),
      failures: [
        ...capability('promote'), TOKEN, RECORD_NOT_FOUND, BODY_INVALID, ...IDEMPOTENCY, REPLY_TIMEOUT, ...REVIEW_DECISION,
        { status: STATUS_OF.MEM_FORBIDDEN, code: 'MEM_FORBIDDEN', when: 'no grant lets this reviewer move the record to that visibility' },
        { status: STATUS_OF.MEM_INVALID_TRANSITION, code: 'MEM_INVALID_TRANSITION', when: 'the record has expired, is active and not widened, or cannot be promoted in its status' },
        ...SERVED,
      ],
    },
  },
  '/v1/memories/{id}/reject': {
    post: {
      operationId: 'rejectMemory', tag: 'review', summary: 'Reject a quarantined memory',
      parameters: [pathId('id', 'the record\'s id'), idempotencyKey, consistencyToken],
      body: { schema: 'RejectRequest', required: true, examples: ['rejectRequest'], description: 'the version reviewed, and optionally why (`reason`, a code the record\'s history shows its reviewers; an unknown code is 422 and nothing changes); a rejection moves nothing, so `visibility` is refused (422)' },
      responses: mutation('200', { schema: 'MutationResponse', description: 'tombstoned', examples: ['rejectResponse'] }),
      failures: [
        ...capability('review'), TOKEN, RECORD_NOT_FOUND, BODY_INVALID, ...IDEMPOTENCY, REPLY_TIMEOUT, ...REVIEW_DECISION,
        { status: STATUS_OF.MEM_INVALID_TRANSITION, code: 'MEM_INVALID_TRANSITION', when: 'only a quarantined memory can be rejected' },
        ...SERVED,
      ],
    },
  },
  '/v1/review/quarantine': {
    get: {
      operationId: 'listQuarantine', tag: 'review', summary: 'Quarantined memories to review',
      parameters: [
        { name: 'subjectId', in: 'query', required: false, schema: jsonSchema(QuarantineQuery.shape.subjectId.unwrap()), description: 'only this subject\'s records (an unknown subject: an empty list)' },
      ],
      responses: answer('200', { schema: 'QuarantinedMemories', description: 'the quarantined, unexpired records in the reviewer\'s partitions, oldest first' }),
      failures: [
        ...capability('review'),
        { status: STATUS_OF.MEM_VALIDATION, code: 'MEM_VALIDATION', when: 'an unknown query parameter, a subjectId that is not an id' },
        ...SERVED,
      ],
    },
  },
  '/v1/search': {
    post: {
      operationId: 'searchMemories', tag: 'search', summary: 'Search',
      parameters: [consistencyToken],
      body: { schema: 'SearchRequest', required: true, examples: ['searchRequest'] },
      responses: answer('200', {
        schema: 'EvidencePacket', description: 'an evidence packet (possibly empty, whether hidden records match or not)', examples: ['searchResponse'],
        links: { validate: link('validatePacket', 'id', 'packetId', 'validate the packet before acting on it'), read: link('getMemory', 'id', 'items/0/recordId', 'read the first item\'s record') },
      }),
      failures: [
        ...capability('search'), BODY_INVALID, TOKEN, NOT_YET_CONSISTENT,
        { ...BODY_INVALID, when: 'a mode or embedding this runtime cannot serve: semantic or hybrid without vectors, an embedding for a lexical search or from another model, a zero vector' },
        ...SERVED,
      ],
    },
  },
  '/v1/packets/{id}/validate': {
    post: {
      operationId: 'validatePacket', tag: 'search', summary: 'Validate a packet before acting',
      parameters: [pathId('id', 'the packetId a search answered')],
      responses: answer('200', { schema: 'PacketValidation', description: 'whether every item may still be cited (the policy revision and the records unchanged)', examples: ['packetValidation'] }),
      failures: [...capability('cite'), notFound('no packet with this id in the capability\'s tenant (or not an id)'), ...SERVED],
    },
  },
  '/v1/subjects/{subjectId}/summary': {
    get: {
      operationId: 'getSubjectSummary', tag: 'summaries', summary: 'Extractive summaries of a subject in the caller\'s partitions, for its purpose',
      parameters: [
        {
          name: 'subjectId', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: LIMITS.maxIdLength },
          description: 'the subject; a string that is not an id (letters, digits and . _ : @ -) names no subject and answers `{items: []}` like an unknown one',
        },
        consistencyToken,
      ],
      responses: answer('200', {
        schema: 'SubjectSummaries', examples: ['summaries', 'noSummaries'],
        description: 'the summaries the caller may read; `{items: []}` for an unknown subject and an unreadable one alike (never 404)',
      }),
      failures: [...capability('search'), TOKEN, NOT_YET_CONSISTENT, ...SERVED],
    },
  },
  '/v1/subjects/{subjectId}/forget': {
    post: {
      operationId: 'forgetSubject', tag: 'deletion', summary: 'Forget a subject: every record about it the requester may delete (for a privacy officer, every one in the tenant)',
      parameters: [pathId('subjectId', 'the subject'), idempotencyKey, consistencyToken],
      responses: mutation('202', { schema: 'DeletionAccepted', description: 'the deletion job, the same whether the subject had records or not', examples: ['deletionAccepted'], links: JOB_LINK }),
      failures: [...capability('request_delete'), TOKEN, notFound('the subjectId is not an id'), ...IDEMPOTENCY, REPLY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/deletion-jobs': {
    get: {
      operationId: 'listDeletionJobs', tag: 'deletion', summary: 'Deletion jobs, oldest first (or newest first): every job of the tenant for an administrator, the caller\'s own otherwise',
      parameters: [
        { name: 'status', in: 'query', required: false, schema: jsonSchema(DeletionJobListQuery.shape.status.unwrap()), description: 'only jobs in this status' },
        { name: 'since', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'only jobs requested at or after this time' },
        { name: 'order', in: 'query', required: false, schema: jsonSchema(DeletionJobListQuery.shape.order.unwrap()), description: 'by request time: `oldest` first (the default) or `newest` first' },
        {
          name: 'subjectId', in: 'query', required: false, schema: jsonSchema(DeletionJobListQuery.shape.subjectId.unwrap()),
          description: 'only this subject\'s jobs among those the caller may see (a subject whose jobs others requested answers as one without jobs)',
        },
        { name: 'cursor', in: 'query', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,1000}$' }, description: 'the `nextCursor` of the previous page, with the same `order`, by the same principal' },
        { name: 'limit', in: 'query', required: false, schema: { type: 'string', pattern: '^(100|[1-9][0-9]?)$' }, description: 'jobs per page, 1–100 (50)' },
      ],
      responses: answer('200', {
        schema: 'DeletionJobList', description: 'a page of jobs; `nextCursor` while there may be more', examples: ['deletionJobList'],
      }),
      failures: [
        ...CAPABILITY, { ...adminOnly, when: 'the capability grants neither "admin" nor "request_delete"' },
        { status: STATUS_OF.MEM_VALIDATION, code: 'MEM_VALIDATION', when: 'an unknown query parameter, a status or order that is not one, a time that is not ISO, a subjectId that is not an id, a cursor that is not this listing\'s (or of the other order), a limit outside 1–100' },
        ...SERVED,
      ],
    },
  },
  '/v1/deletion-jobs/{id}': {
    get: {
      operationId: 'getDeletionJob', tag: 'deletion', summary: 'A deletion job with its per-target evidence',
      parameters: [pathId('id', 'the jobId a deletion answered')],
      responses: answer('200', {
        schema: 'DeletionJob', description: 'the job', examples: ['deletionJob'],
        links: { receipt: link('getDeletionReceipt', 'id', 'jobId', 'the signed receipt, once the job finished') },
      }),
      failures: [...CAPABILITY, { ...adminOnly, when: 'the capability grants neither "admin" nor "request_delete"' }, notFound('no job with this id this capability may see: unknown, another requester\'s (without "admin"), or not an id'), ...SERVED],
    },
  },
  '/v1/deletion-jobs/{id}/receipt': {
    get: {
      operationId: 'getDeletionReceipt', tag: 'deletion', summary: 'Signed deletion receipt; `Accept: application/jose` for the bare JWS',
      parameters: [pathId('id', 'the jobId')],
      responses: {
        '200': {
          description: 'the receipt: `{receipt: <compact JWS>, payload}` (and `openings` of its content commitments for the principal who requested the job), or the bare JWS with `Accept: application/jose`',
          content: { ...json('ReceiptResponse', ['receipt']), 'application/jose': { schema: { type: 'string' } } },
        },
      },
      failures: [
        ...CAPABILITY, { ...adminOnly, when: 'the capability grants neither "admin" nor "request_delete"' },
        notFound('as for the job'), NOT_YET_AVAILABLE, ...SERVED,
      ],
    },
  },
  '/v1/receipt-keys': {
    get: {
      operationId: 'listReceiptKeys', tag: 'deletion', summary: 'Public keys (JWKS) that sign deletion receipts; no capability needed',
      responses: answer('200', { schema: 'ReceiptKeys', description: 'every key that signed receipts here' }),
      failures: SERVED,
    },
  },
  [RUNTIME_PROOF_PATH]: {
    get: {
      operationId: 'proveRuntime', tag: 'capabilities',
      summary: 'The runtime signs a client\'s nonce, so a client that found no configured address can check, before it sends a credential, that it reached the runtime of its data directory; no capability needed',
      description: 'Ed25519 with the capability signing key (its public half is `keys/capability-signing.public.jwk.json` in the data directory) over the UTF-8 bytes `governed-memory runtime proof v1\\n<address>\\n<nonce>\\n`, where `address` is the host and port the connection reached. Design §9.2.',
      parameters: [{ name: 'nonce', in: 'query', required: true, schema: jsonSchema(RuntimeProofNonce), description: '32 fresh random bytes, base64url' }],
      responses: answer('200', { schema: 'RuntimeProof', description: 'the signature, and the address it was given for' }),
      failures: [{ status: STATUS_OF.MEM_VALIDATION, code: 'MEM_VALIDATION', when: 'no nonce, a nonce that is not 32 bytes in base64url, or another query parameter' }, INTERNAL],
    },
  },
  ...ADMINISTRATION_PATHS,
  '/healthz': {
    get: {
      operationId: 'getLiveness', tag: 'operations', summary: 'Liveness', unlimited: true,
      responses: answer('200', { schema: 'Liveness', description: 'alive' }), failures: [],
    },
  },
  '/readyz': {
    get: {
      operationId: 'getReadiness', tag: 'operations', summary: 'Readiness', unlimited: true,
      responses: { ...answer('200', { schema: 'Readiness', description: 'ready: every dependency answers' }), ...answer('503', { schema: 'Readiness', description: '`not_ready`: a dependency does not answer' }) },
      failures: [],
    },
  },
  '/v1/ops/overview': {
    get: {
      operationId: 'getOpsOverview', tag: 'operations', summary: 'Consumer lag per group and partition, dead letters and throughput, with the last minutes\' history',
      responses: answer('200', { schema: 'OpsOverview', description: 'the deployment\'s numbers now; `sources` names any metrics URL that did not answer' }),
      failures: [...capability('admin'), NOT_ADMIN, ...SERVED],
    },
  },
  '/metrics': {
    get: {
      operationId: 'getMetrics', tag: 'operations', summary: 'Prometheus metrics', unlimited: true,
      responses: { '200': text('text/plain', 'the Prometheus text exposition') }, failures: [INTERNAL],
    },
  },
  '/openapi.json': {
    get: {
      operationId: 'getOpenApiDocument', tag: 'documentation', summary: 'This document',
      responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } }, failures: [],
    },
  },
  '/docs': {
    get: {
      operationId: 'redirectApiReference', tag: 'documentation', summary: `Redirects to ${API_REFERENCE_PATH}`,
      responses: { '301': { description: `to ${API_REFERENCE_PATH}`, headers: { Location: { description: API_REFERENCE_PATH, schema: { type: 'string' } } } } }, failures: [],
    },
  },
  [API_REFERENCE_PATH]: {
    get: {
      operationId: 'getApiReference', tag: 'documentation', summary: 'This document, rendered (Scalar); everything it loads is served here',
      responses: { '200': text('text/html', 'the page') }, failures: [],
    },
  },
  [`${API_REFERENCE_PATH}js/scalar.js`]: {
    get: {
      operationId: 'getApiReferenceScript', tag: 'documentation', summary: 'The rendering script the page loads',
      responses: { '200': text('application/javascript', 'the bundled script') }, failures: [],
    },
  },
};

const TAGS = [
  ['capabilities', 'Capabilities: short-lived signed tokens, issued with the issuer credential'],
  ['memories', 'Writing and reading memories'],
  ['review', 'Reviewing quarantined memories'],
  ['search', 'Search and evidence packets'],
  ['summaries', 'Extractive summaries of a subject'],
  ['deletion', 'Deletion, forgetting, deletion jobs and their signed receipts'],
  ['administration', 'Grants, delegations, revocation and legal holds'],
  ['operations', 'Health, readiness and metrics'],
  ['documentation', 'This document and its rendering'],
] as const;

const DESCRIPTION = `Governed memory for AI agents. Every operation but the public ones needs \`Authorization: Bearer <capability>\`.
Errors are \`application/problem+json\` (RFC 9457) with a stable \`code\`; each operation lists every status it can answer and the codes each carries.

- Every GET also answers HEAD.
- Some answers are given before any route is chosen, so they are listed on every operation: 400 for a request that is not HTTP, 408 for one whose headers are not received in time, 431 for headers over 16 KiB, and, on a path with a parameter, 400 for a segment that is not percent-encoding and 414 for one longer than any id.
- A server that is shutting down answers every request 503 \`MEM_UNAVAILABLE\` (retriable).
- Every route but \`/healthz\`, \`/readyz\` and \`/metrics\` is rate-limited per capability (per address without one): 429 \`MEM_RATE_LIMITED\`.`;

/** OpenAPI 3.1 generated from the same zod schemas the handlers validate with. */
export function openApiDocument() {
  const paths = Object.fromEntries(Object.entries(PATHS).map(([path, methods]) => [
    path,
    Object.fromEntries(Object.entries(methods).map(([method, op]) => [method, assemble(path, method as 'get' | 'post' | 'delete', op)])),
  ]));
  return {
    openapi: '3.1.0',
    info: { title: 'Governed memory API', version: '1.0.0', description: DESCRIPTION },
    servers: [{ url: '/', description: 'the server that serves this document' }],
    tags: TAGS.map(([name, description]) => ({ name, description })),
    components: {
      securitySchemes: {
        capability: { type: 'http', scheme: 'bearer', bearerFormat: 'JWS (EdDSA) capability', description: 'a capability from POST /v1/capabilities' },
        issuer: { type: 'http', scheme: 'bearer', description: 'the issuer credential (MEMORY_ISSUER_CREDENTIAL)' },
      },
      schemas: Object.fromEntries(Object.entries(SCHEMAS).map(([name, s]) => [name, jsonSchema(s)])),
    },
    paths,
  };
}
