import { z } from 'zod';
import {
  AddDelegationRequest, AddGrantRequest, AsyncWriteAccepted, CommandStatusResponse, DelegationCreatedResponse, DeletionAccepted, DeletionJob,
  DeletionJobList, OpsOverview, EvidencePacket, GrantCreatedResponse, Id, IssueCapabilityRequest, IssueCapabilityResponse, LegalHold,
  LegalHoldCreatedResponse, LIMITS, MemoryRecord, MutationResponse, PacketValidation, PlaceLegalHoldRequest, PolicyActionRequest,
  PolicyRevisionResponse, Problem, ReceiptPublicKey, ReceiptResponse, RecordHistory, RejectRequest, SearchRequest, SubjectSummaries,
  VersionedRequest, WriteMemoryBatchItem, WriteMemoryBatchResponse, WriteMemoryRequest, guardOf, type ResourceOf,
} from '@gm/contracts';
import { RuntimeProof } from '@gm/config';
import { documentPath } from './authorization.ts';
import { EXAMPLES, type ExampleName } from './openapi-examples.ts';
import { ANY_REQUEST, BODY_FRAMING, INTERNAL, OUTAGE, PATH_PARAMETER, RATE_LIMITED, byStatus, type Failure } from './openapi-failures.ts';
import { STATUS_OF, STATUS_TITLES } from './problem.ts';

/* The parts every operation of the OpenAPI document is built from (openapi.ts, openapi-administration.ts). */

export const jsonSchema = (s: z.ZodType): Record<string, unknown> => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

export const SCHEMAS = {
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
export type SchemaName = keyof typeof SCHEMAS;

export const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
export const examples = (names: readonly ExampleName[]) =>
  names.length === 0 ? {} : { examples: Object.fromEntries(names.map((n) => [n, { summary: EXAMPLES[n].summary, value: EXAMPLES[n].value }])) };
export const json = (name: SchemaName, exampleNames: readonly ExampleName[] = []) => ({ 'application/json': { schema: ref(name), ...examples(exampleNames) } });

/** `$response.body#/<pointer>` into an operation's parameter; OpenAPI links walk the main flows. */
export const link = (operationId: string, parameter: string, pointer: string, description: string) =>
  ({ operationId, parameters: { [parameter]: `$response.body#/${pointer}` }, description });

export type Links = Record<string, ReturnType<typeof link>>;
export interface Answer { schema: SchemaName; description: string; examples?: ExampleName[]; links?: Links; headers?: Record<string, object> }
export const answer = (status: string, a: Answer) => ({
  [status]: { description: a.description, content: json(a.schema, a.examples), ...(a.headers ? { headers: a.headers } : {}), ...(a.links ? { links: a.links } : {}) },
});

export const CONSISTENCY_TOKEN_SCHEMA = { type: 'string', pattern: '^ct1\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$' };
export const MUTATION_HEADERS = {
  'Read-Your-Writes': {
    description: '`confirmed`: the projections folded the result, so the next read sees it; `stored` (a write sent with `Prefer: wait-for=stored`): the state store folded it, so a read by id sees it and a search does once it sends the Consistency-Token; `pending`: accepted and durable, but the wait for the projections ran out first',
    schema: { type: 'string', enum: ['confirmed', 'stored', 'pending'] },
  },
  'Consistency-Token': {
    description: 'where this mutation (and the token the request sent) landed in the log; a read that sends it waits until the projections passed it',
    schema: CONSISTENCY_TOKEN_SCHEMA,
  },
};
export const ASYNC_HEADERS = {
  'Consistency-Token': MUTATION_HEADERS['Consistency-Token'],
  'Preference-Applied': { description: 'the asynchronous answer was given', schema: { type: 'string', const: 'respond-async' } },
};
/** A mutation's answer: its body plus whether read-your-writes was confirmed (command-gateway.ts). */
export const mutation = (status: string, a: Answer) => answer(status, { ...a, headers: MUTATION_HEADERS });
/** A write's synchronous answer: a mutation's, plus the preference honoured when it waited only until stored (write-preference.ts). */
export const writeMutation = (status: string, a: Answer) => answer(status, {
  ...a,
  headers: { ...MUTATION_HEADERS, 'Preference-Applied': { description: 'sent with `Prefer: wait-for=stored`: the answer waited for the state store only', schema: { type: 'string', const: 'wait-for=stored' } } },
});

export const idSchema = jsonSchema(Id);
export const pathId = (name: string, what: string) => ({
  name, in: 'path', required: true, schema: idSchema,
  description: `${what}: 1–${LIMITS.maxIdLength} letters, digits and . _ : @ -, not \`.\` or \`..\` (anything else names nothing: the operation's 404)`,
});
export const consistencyToken = {
  name: 'Consistency-Token', in: 'header', required: false, schema: CONSISTENCY_TOKEN_SCHEMA,
  description: 'a token a mutation answered: a read waits until the projections passed it (then 503 `MEM_NOT_YET_CONSISTENT`); a mutation carries it into its own token',
};
export const idempotencyKey = {
  name: 'Idempotency-Key', in: 'header', required: false, schema: idSchema,
  description: 'the same key within the idempotency window answers the first result and writes nothing twice; the same key for another request is 422 `MEM_IDEMPOTENCY_MISMATCH`',
};
export const preferWrite = {
  name: 'Prefer', in: 'header', required: false, schema: { type: 'string', examples: ['respond-async', 'wait-for=stored'] },
  description: 'RFC 7240. `respond-async`: answer 202 once the command is durably in the log, before write-admission decided it. `wait-for=stored`: answer once the write is decided and in the state store (reads by id see it), not waiting for the search indexes; a search sees it once it sends the answer\'s Consistency-Token. With both, `respond-async`; anything else is ignored (no `Preference-Applied`)',
};

export const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } } };

/** One problem+json response per status, naming each code it carries and when. */
export function problemResponses(failures: readonly Failure[], problemExamples: Partial<Record<number, ExampleName>>): Record<string, object> {
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
export const ON: Record<ResourceOf, string> = {
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

export interface Operation {
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
export const SERVED = [INTERNAL, OUTAGE];

export function assemble(path: string, method: 'get' | 'post' | 'delete', op: Operation): object {
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

export const READ_LINK = link('getMemory', 'id', 'id', 'read the record');
export const RECORD_LINKS: Links = {
  read: READ_LINK,
  history: link('getMemoryHistory', 'id', 'id', 'its versions and supersession chain'),
  delete: link('deleteMemory', 'id', 'id', 'delete it (a deletion job)'),
};
export const JOB_LINK: Links = { job: link('getDeletionJob', 'id', 'jobId', 'follow the deletion job') };
export const BACKLOG = { status: STATUS_OF.MEM_UNAVAILABLE, code: 'MEM_UNAVAILABLE', when: 'with `Prefer: respond-async`: the pipeline is more than MEMORY_ASYNC_BACKLOG messages behind; nothing was written (retriable)' } as const;
export const policyChange = (status: string, schema: SchemaName, description: string, links?: Links) =>
  answer(status, { schema, description: `${description}; the policy projector applied it (the revision it produced)`, ...(links ? { links } : {}) });
export const adminOnly = { status: STATUS_OF.CAP_ACTION_DENIED, code: 'CAP_ACTION_DENIED', when: 'the capability does not grant "admin"' } as const;

export const text = (type: string, description: string) => ({ description, content: { [type]: { schema: { type: 'string' } } } });

