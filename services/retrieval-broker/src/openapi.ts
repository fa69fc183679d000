import { z } from 'zod';
import {
  AddDelegationRequest, AddGrantRequest, AsyncWriteAccepted, CommandStatusResponse, DelegationCreatedResponse, DeletionAccepted, DeletionJob, DeletionJobList, DeletionJobListQuery, DeletionScope, QuarantineQuery, OpsOverview,
  EvidencePacket, GrantCreatedResponse, Id, IssueCapabilityRequest, IssueCapabilityResponse, LegalHold, LegalHoldCreatedResponse, LIMITS,
  MemoryRecord, MutationResponse, PacketValidation, PlaceLegalHoldRequest, PolicyActionRequest, PolicyRevisionResponse, Problem,
  ReceiptPublicKey, ReceiptResponse, RecordHistory, RejectRequest, SearchRequest, SubjectSummaries, VersionedRequest, WriteMemoryBatchItem,
  WriteMemoryBatchResponse, WriteMemoryRequest, guardOf, type ResourceOf,
} from '@gm/contracts';
import { RUNTIME_PROOF_PATH, RuntimeProof, RuntimeProofNonce } from '@gm/config';
import { API_REFERENCE_PATH } from './api-reference.ts';
import { documentPath } from './authorization.ts';
import { EXAMPLES, type ExampleName } from './openapi-examples.ts';
import {
  ANY_REQUEST, BODY_FRAMING, BODY_INVALID, CAPABILITY, ID_TAKEN, IDEMPOTENCY, IMPERSONATION, INTERNAL, ISSUER, NOT_YET_AVAILABLE, NOT_YET_CONSISTENT, OUTAGE,
  PATH_PARAMETER, POLICY_TIMEOUT, RATE_LIMITED, RECORD_NOT_FOUND, REPLY_TIMEOUT, REVIEW_DECISION, SCOPE, TOKEN, WRITE_DECISION, WRITE_EDGE,
  GRANT_RACED, LAST_ADMIN, NOT_ADMIN, byStatus, capability, notFound, type Failure,
} from './openapi-failures.ts';
import { STATUS_OF, STATUS_TITLES } from './problem.ts';

/*
 * OpenAPI 3.1, generated from the same zod schemas the handlers validate with. Every operation
 * declares every status it can answer (openapi-failures.ts), and no `default`:
 * test/e2e/openapi.e2e.spec.ts calls each one with bad input and fails on any other status.
 */

const jsonSchema = (s: z.ZodType): Record<string, unknown> => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const SCHEMAS = {
  IssueCapabilityRequest, IssueCapabilityResponse, WriteMemoryRequest, MutationResponse, AsyncWriteAccepted, CommandStatusResponse,
  // The handler checks the envelope first and each item on its own; documented as items of the write body.
  WriteMemoryBatchRequest: z.object({ items: z.array(WriteMemoryBatchItem).min(1).max(LIMITS.maxBatchItems) }).strict(),
  WriteMemoryBatchResponse, MemoryRecord, RecordHistory, PromoteRequest: VersionedRequest, RejectRequest, SearchRequest, EvidencePacket,
  PacketValidation, SubjectSummaries, DeletionAccepted, DeletionJob, DeletionJobList, ReceiptResponse, ReceiptKeys: z.object({ keys: z.array(ReceiptPublicKey) }), OpsOverview,
  QuarantinedMemories: z.object({ items: z.array(MemoryRecord) }), AddGrantRequest, GrantCreatedResponse, AddDelegationRequest,
  DelegationCreatedResponse, PolicyActionRequest, PolicyRevisionResponse, PlaceLegalHoldRequest, LegalHoldCreatedResponse,
  LegalHolds: z.object({ items: z.array(LegalHold) }), Problem, RuntimeProof,
  Liveness: z.object({ status: z.literal('ok') }), Readiness: z.object({ status: z.enum(['ready', 'not_ready']) }),
} satisfies Record<string, z.ZodType>;
type SchemaName = keyof typeof SCHEMAS;

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const examples = (names: readonly ExampleName[]) =>
  names.length === 0 ? {} : { examples: Object.fromEntries(names.map((n) => [n, { summary: EXAMPLES[n].summary, value: EXAMPLES[n].value }])) };
const json = (name: SchemaName, exampleNames: readonly ExampleName[] = []) => ({ 'application/json': { schema: ref(name), ...examples(exampleNames) } });

/** `$response.body#/<pointer>` into an operation's parameter; OpenAPI links walk the main flows. */
const link = (operationId: string, parameter: string, pointer: string, description: string) =>
  ({ operationId, parameters: { [parameter]: `$response.body#/${pointer}` }, description });

type Links = Record<string, ReturnType<typeof link>>;
interface Answer { schema: SchemaName; description: string; examples?: ExampleName[]; links?: Links; headers?: Record<string, object> }
const answer = (status: string, a: Answer) => ({
  [status]: { description: a.description, content: json(a.schema, a.examples), ...(a.headers ? { headers: a.headers } : {}), ...(a.links ? { links: a.links } : {}) },
});

const CONSISTENCY_TOKEN_SCHEMA = { type: 'string', pattern: '^ct1\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$' };
const MUTATION_HEADERS = {
  'Read-Your-Writes': {
    description: '`confirmed`: the projections folded the result, so the next read sees it; `pending`: accepted and durable, but the wait for the projections ran out first',
    schema: { type: 'string', enum: ['confirmed', 'pending'] },
  },
  'Consistency-Token': {
    description: 'where this mutation (and the token the request sent) landed in the log; a read that sends it waits until the projections passed it',
    schema: CONSISTENCY_TOKEN_SCHEMA,
  },
};
const ASYNC_HEADERS = {
  'Consistency-Token': MUTATION_HEADERS['Consistency-Token'],
  'Preference-Applied': { description: 'the asynchronous answer was given', schema: { type: 'string', const: 'respond-async' } },
};
/** A mutation's answer: its body plus whether read-your-writes was confirmed (command-gateway.ts). */
const mutation = (status: string, a: Answer) => answer(status, { ...a, headers: MUTATION_HEADERS });

const idSchema = jsonSchema(Id);
const pathId = (name: string, what: string) => ({
  name, in: 'path', required: true, schema: idSchema,
  description: `${what}: 1–${LIMITS.maxIdLength} letters, digits and . _ : @ -, not \`.\` or \`..\` (anything else names nothing: the operation's 404)`,
});
const consistencyToken = {
  name: 'Consistency-Token', in: 'header', required: false, schema: CONSISTENCY_TOKEN_SCHEMA,
  description: 'a token a mutation answered: a read waits until the projections passed it (then 503 `MEM_NOT_YET_CONSISTENT`); a mutation carries it into its own token',
};
const idempotencyKey = {
  name: 'Idempotency-Key', in: 'header', required: false, schema: idSchema,
  description: 'the same key within the idempotency window answers the first result and writes nothing twice; the same key for another request is 422 `MEM_IDEMPOTENCY_MISMATCH`',
};
const preferAsync = {
  name: 'Prefer', in: 'header', required: false, schema: { type: 'string', examples: ['respond-async'] },
  description: '`respond-async` (RFC 7240): answer 202 once the command is durably in the log, before write-admission decided it',
};

const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } } };

/** One problem+json response per status, naming each code it carries and when. */
function problemResponses(failures: readonly Failure[], problemExamples: Partial<Record<number, ExampleName>>): Record<string, object> {
  const responses: Record<string, object> = {};
  for (const [status, codes] of byStatus(failures)) {
    const example = problemExamples[status];
    responses[String(status)] = {
      description: `${STATUS_TITLES[status] ?? 'Error'}:\n${[...codes].map(([code, reasons]) => `- \`${code}\`: ${reasons.join('; ')}`).join('\n')}`,
      ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}),
      content: {
        'application/problem+json': {
          schema: { allOf: [ref('Problem'), { type: 'object', properties: { status: { const: status }, code: { enum: [...codes.keys()] } } }] },
          ...(example ? examples([example]) : {}),
        },
      },
    };
  }
  return responses;
}

/** What the summary says each kind of resource of the authorization table (@gm/contracts OPERATIONS) is. */
const ON: Record<ResourceOf, string> = {
  partitions: 'in the partitions the policy decision point opens to it',
  record: 'on the record\'s partition',
  history: 'on the record\'s partition; a record a reviewer rejected, with `review` on its partition',
  subject: 'on the records of the subject it may delete; every one for `request_delete` on the tenant',
  packet: 'the packet\'s holder only',
  command: 'the writing principal only',
  job: 'its requesting principal, or `admin` on the tenant',
  jobs: 'its requesting principal\'s, or every one for `admin` on the tenant',
  grant: '`admin` on the grant\'s resource; a resource\'s first admin grant is the bootstrap',
  delegation: 'the delegator within its own actions, or `admin` on every delegated resource',
  capability: 'the caller\'s principal\'s own, or `admin` on the tenant',
  tenant: '`admin` on the tenant (a capability scoped to `{kind: "tenant"}`)',
};

interface Operation {
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  parameters?: object[];
  body?: { schema: SchemaName; required: boolean; examples?: ExampleName[]; description?: string };
  responses: Record<string, object>;
  failures: readonly Failure[];
  problemExamples?: Partial<Record<number, ExampleName>>;
  /** The probes are never rate-limited (app.ts). */
  unlimited?: boolean;
}

/** What every operation of the API that reaches its dependencies can also answer. */
const SERVED = [INTERNAL, OUTAGE];

function assemble(path: string, method: 'get' | 'post' | 'delete', op: Operation): object {
  const failures = [
    ...ANY_REQUEST, ...(op.unlimited ? [] : [RATE_LIMITED]), ...(method === 'get' ? [] : BODY_FRAMING),
    ...(path.includes('{') ? PATH_PARAMETER : []), ...op.failures,
  ];
  const problems = problemResponses(failures, op.problemExamples ?? {});
  const responses: Record<string, object> = { ...problems };
  // A status both an answer and a problem (readiness' 503): one response, both media types.
  for (const [status, response] of Object.entries(op.responses)) {
    const problem = problems[status] as { content?: object; description: string } | undefined;
    const own = response as { content?: object; description: string };
    responses[status] = problem ? { ...own, description: `${own.description}; or ${problem.description}`, content: { ...own.content, ...problem.content } } : own;
  }
  const sorted = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
  // Who may call it is the authorization table's, never restated here; an undeclared operation says so
  // (`x-authorization: null`), and authorization.unit.spec.ts fails for it.
  const guard = guardOf(method, documentPath(path));
  const action = guard === undefined ? ' (undeclared: refused)' : guard.auth === 'capability' ? ` (${guard.actions.length > 3 ? 'any action' : guard.actions.join(' or ')}: ${ON[guard.on]})` : guard.auth === 'issuer' ? ' (the issuer credential)' : '';
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: `${op.summary}${action}`,
    ...(op.description ? { description: op.description } : {}),
    'x-authorization': guard ?? null,
    security: guard?.auth === 'public' ? [] : guard?.auth === 'issuer' ? [{ issuer: [] }] : [{ capability: [] }],
    ...(op.parameters ? { parameters: op.parameters } : {}),
    ...(op.body
      ? { requestBody: { required: op.body.required, ...(op.body.description ? { description: op.body.description } : {}), content: json(op.body.schema, op.body.examples) } }
      : {}),
    responses: sorted,
  };
}

const READ_LINK = link('getMemory', 'id', 'id', 'read the record');
const RECORD_LINKS: Links = {
  read: READ_LINK,
  history: link('getMemoryHistory', 'id', 'id', 'its versions and supersession chain'),
  delete: link('deleteMemory', 'id', 'id', 'delete it (a deletion job)'),
};
const JOB_LINK: Links = { job: link('getDeletionJob', 'id', 'jobId', 'follow the deletion job') };
const BACKLOG = { status: STATUS_OF.MEM_UNAVAILABLE, code: 'MEM_UNAVAILABLE', when: 'with `Prefer: respond-async`: the pipeline is more than MEMORY_ASYNC_BACKLOG messages behind; nothing was written (retriable)' } as const;
const policyChange = (status: string, schema: SchemaName, description: string, links?: Links) =>
  answer(status, { schema, description: `${description}; the policy projector applied it (the revision it produced)`, ...(links ? { links } : {}) });
const adminOnly = { status: STATUS_OF.CAP_ACTION_DENIED, code: 'CAP_ACTION_DENIED', when: 'the capability does not grant "admin"' } as const;

const text = (type: string, description: string) => ({ description, content: { [type]: { schema: { type: 'string' } } } });

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
      parameters: [idempotencyKey, consistencyToken, preferAsync],
      body: { schema: 'WriteMemoryRequest', required: true, examples: ['writeRequest', 'writeUntrustedRequest'] },
      responses: {
        ...mutation('201', { schema: 'MutationResponse', description: 'admitted: `active`, or `quarantined` when untrusted', examples: ['writeResponse'], links: RECORD_LINKS }),
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
      parameters: [consistencyToken, preferAsync],
      body: { schema: 'WriteMemoryBatchRequest', required: true, examples: ['batchRequest'], description: `at most 16 × MEMORY_BODY_LIMIT_BYTES` },
      responses: {
        ...mutation('200', {
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
  '/v1/grants': {
    post: {
      operationId: 'addGrant', tag: 'administration', summary: 'Add a grant (its resource in the capability\'s scopes)',
      body: { schema: 'AddGrantRequest', required: true, examples: ['grantRequest'] },
      responses: policyChange('201', 'GrantCreatedResponse', 'added, with an id the server assigns; a grant identical to one that is there answers that grant\'s id and changes nothing (grants are never rewritten)', { remove: link('removeGrant', 'id', 'grantId', 'remove it') }),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, adminOnly, SCOPE, NOT_ADMIN, GRANT_RACED, POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/grants/{id}': {
    delete: {
      operationId: 'removeGrant', tag: 'administration', summary: 'Remove a grant',
      parameters: [pathId('id', 'the grantId')],
      responses: policyChange('202', 'PolicyRevisionResponse', 'removed'),
      failures: [...capability('admin'), notFound('no grant with this id that the caller may manage (admin on its resource or on the tenant, the resource in scope): unknown and unmanaged ids alike'), LAST_ADMIN, POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/delegations': {
    post: {
      operationId: 'addDelegation', tag: 'administration', summary: 'Delegate to an agent (the delegator is the capability\'s principal)',
      body: { schema: 'AddDelegationRequest', required: true },
      responses: policyChange('201', 'DelegationCreatedResponse', 'delegated', { revoke: link('revokeDelegation', 'id', 'delegationId', 'revoke it') }),
      failures: [
        ...CAPABILITY, BODY_INVALID, IMPERSONATION, { ...IMPERSONATION, when: 'the body names another delegator than the capability\'s principal' },
        { ...SCOPE, when: 'a delegated resource is outside the capability\'s scopes' },
        { ...adminOnly, when: 'without "admin": a delegated agent cannot delegate further, and a principal delegates only actions its capability grants' },
        ID_TAKEN('delegation'), POLICY_TIMEOUT, ...SERVED,
      ],
    },
  },
  '/v1/delegations/{id}/revoke': {
    post: {
      operationId: 'revokeDelegation', tag: 'administration', summary: 'Revoke a delegation',
      parameters: [pathId('id', 'the delegationId')],
      body: { schema: 'PolicyActionRequest', required: false, description: 'none, or `{tenant}` to have it checked' },
      responses: policyChange('202', 'PolicyRevisionResponse', 'revoked'),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, notFound('no delegation with this id this capability may revoke (it is neither the delegator nor an admin of all its resources)'), POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/capabilities/{jti}/revoke': {
    post: {
      operationId: 'revokeCapability', tag: 'administration', summary: 'Revoke a capability until it expires; an unknown, expired or other tenant\'s jti answers the same 202',
      parameters: [pathId('jti', 'the capability\'s jti')],
      body: { schema: 'PolicyActionRequest', required: false, description: 'none, or `{tenant}` to have it checked' },
      responses: policyChange('202', 'PolicyRevisionResponse', 'revoked (or nothing to revoke)'),
      failures: [
        ...CAPABILITY, BODY_INVALID, IMPERSONATION, notFound('the jti is not an id'),
        { ...adminOnly, when: 'another principal\'s capability (or an unknown jti), and this one does not grant "admin"' },
        { ...NOT_ADMIN, when: 'another principal\'s capability (or an unknown jti), and no admin grant on the tenant applies' }, POLICY_TIMEOUT, ...SERVED,
      ],
    },
  },
  '/v1/agents/{id}/revoke': {
    post: {
      operationId: 'revokeAgent', tag: 'administration', summary: 'Revoke an agent',
      parameters: [pathId('id', 'the agentId')],
      body: { schema: 'PolicyActionRequest', required: false, description: 'none, or `{tenant}` to have it checked' },
      responses: policyChange('202', 'PolicyRevisionResponse', 'revoked'),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, adminOnly, NOT_ADMIN, notFound('the agent id is not an id'), POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/legal-holds': {
    post: {
      operationId: 'placeLegalHold', tag: 'administration', summary: 'Place a legal hold on a subject',
      body: { schema: 'PlaceLegalHoldRequest', required: true, examples: ['legalHoldRequest'] },
      responses: policyChange('201', 'LegalHoldCreatedResponse', 'placed', { release: link('releaseLegalHold', 'id', 'holdId', 'release it') }),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, adminOnly, NOT_ADMIN, ID_TAKEN('legal hold'), POLICY_TIMEOUT, ...SERVED],
    },
    get: {
      operationId: 'listLegalHolds', tag: 'administration', summary: 'Legal holds of the tenant',
      responses: answer('200', { schema: 'LegalHolds', description: 'the holds' }),
      failures: [...capability('admin'), NOT_ADMIN, ...SERVED],
    },
  },
  '/v1/legal-holds/{id}': {
    delete: {
      operationId: 'releaseLegalHold', tag: 'administration', summary: 'Release a legal hold',
      parameters: [pathId('id', 'the holdId')],
      responses: policyChange('202', 'PolicyRevisionResponse', 'released'),
      failures: [...capability('admin'), NOT_ADMIN, notFound('no legal hold with this id in the tenant'), POLICY_TIMEOUT, ...SERVED],
    },
  },
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
