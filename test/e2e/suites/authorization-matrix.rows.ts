import { expect } from 'vitest';
import { memory, eventually, type ApiResponse } from '../harness.ts';
import { ACME, MAPLE, aliceWrites, claimsOf, expectRecord, settledJob, type Fixture, type Owner, type Persona } from './authorization-matrix.fixture.ts';

/** One HTTP request of a row. */
export interface Req {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What a persona must get: a status and code; `uniform`: byte for byte the answer for something that never existed (§6.4). */
export interface Cell {
  status: number;
  code?: string;
  uniform?: true;
  check?: (res: ApiResponse, at: { persona: Persona; f: Fixture }) => Promise<void> | void;
}

/** One operation of the table, called as every persona on a target made for it. */
interface Row<T> {
  owner: Owner;
  setup: (f: Fixture) => Promise<T>;
  request: (t: T) => Req;
  /** The same request naming what never existed (for `uniform` cells). */
  missing?: (t: T) => Req;
  /** What every persona but the owner gets, unless `cells` says otherwise (revoked and expired: 401). */
  refused: Cell;
  cells?: Partial<Record<Persona, Cell>>;
  owns: Cell;
  /** Asserted after every refused call: what it must not have changed. */
  unchanged: (f: Fixture, t: T) => Promise<void>;
  /** Asserted after the owner's call: what it did. */
  after?: (f: Fixture, t: T, res: ApiResponse) => Promise<void>;
}

export interface BoundRow {
  request: Req;
  missing?: Req;
  unchanged(): Promise<void>;
  after(res: ApiResponse): Promise<void>;
}

export interface MatrixRow {
  owner: Owner;
  cell(persona: Exclude<Persona, 'owner'>): Cell;
  owns: Cell;
  bind(f: Fixture): Promise<BoundRow>;
}

const row = <T>(r: Row<T>): MatrixRow => ({
  owner: r.owner,
  owns: r.owns,
  cell: (persona) =>
    r.cells?.[persona] ??
    (persona === 'revoked' ? { status: 401, code: 'CAP_REVOKED' } : persona === 'expired' ? { status: 401, code: 'CAP_EXPIRED' } : r.refused),
  bind: async (f) => {
    const t = await r.setup(f);
    const missing = r.missing;
    return {
      request: r.request(t),
      ...(missing === undefined ? {} : { missing: missing(t) }),
      unchanged: () => r.unchanged(f, t),
      after: async (res) => r.after?.(f, t, res),
    };
  },
});

const NOT_FOUND: Cell = { status: 404, code: 'MEM_NOT_FOUND', uniform: true };
const SCOPE_DENIED: Cell = { status: 403, code: 'CAP_SCOPE_DENIED' };
const NEVER = 'mx-never-existed';
const NEVER_ULID = '01JZZZZZZZZZZZZZZZZZZZZZZZ';

/** A batch answers 200 with each item as the single write would answer it. */
const batchItem = (httpStatus: number, code?: string): Cell => ({
  status: 200,
  check: (res) => expect((res.body.items as unknown as Array<Record<string, unknown>>)[0]).toMatchObject({ httpStatus, ...(code ? { error: { code } } : {}) }),
});

const ids = (res: ApiResponse, field: 'recordId' | 'id' | 'jobId' | 'holdId') =>
  ((res.body.items ?? []) as unknown as Array<Record<string, unknown>>).map((i) => i[field]);

/** A private record of Alice's, overwritten only by its writer (principal and agent). */
const overwrite = (id: string) => memory({ id, subjectId: `${id}-subject`, visibility: 'private', content: 'Overwritten by someone else', expectedVersion: 1 });

const aliceJob = new WeakMap<Fixture, Promise<string>>();
/** One forget of Alice's own, verified with its receipt: the target of the job rows. */
function aliceJobOf(f: Fixture): Promise<string> {
  let job = aliceJob.get(f);
  if (job === undefined) {
    job = (async () => {
      const id = await aliceWrites(f, f.fresh('job'));
      const res = await f.rt.api('POST', `/v1/subjects/${id}-subject/forget`, { token: f.alice, body: {} });
      expect(res.status, res.text).toBe(202);
      const jobId = String(res.body.jobId);
      expect((await settledJob(f, jobId, f.alice)).status).toBe('verified');
      await eventually('receipt', async () => (await f.rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: f.alice })).status === 200, 60_000);
      return jobId;
    })();
    aliceJob.set(f, job);
  }
  return job;
}

const grantAbsent = (grantId: string) => async (f: Fixture) => expect(await f.rt.state.policies.grant('acme', grantId)).toBeNull();
/** The grants of acme held by this principal (grant ids are the server's: a row names its grantee instead). */
const grantsOf = async (f: Fixture, principalId: string) => (await f.rt.state.policies.grants('acme')).filter((g) => g.principal.id === principalId);
const works = async (f: Fixture, token: string) => {
  const res = await f.rt.api('POST', '/v1/search', { token, body: { query: 'anything' } });
  expect(res.status, res.text).toBe(200);
};

/**
 * The matrix: every capability-guarded operation of OPERATIONS (but the Kafka ingest, the
 * ingest suite's), keyed exactly as the table is.
 */
export const ROWS: Record<string, MatrixRow> = {
  'POST /v1/memories': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('write')),
    request: (id) => ({ method: 'POST', path: '/v1/memories', body: overwrite(id) }),
    refused: { status: 409, code: 'MEM_ID_TAKEN' },
    cells: {
      otherResource: { status: 403, code: 'MEM_FORBIDDEN' },
      noGrant: { status: 403, code: 'MEM_FORBIDDEN' },
      delegate: { status: 403, code: 'MEM_FORBIDDEN' },
      // Globex has no such record: its own writer's expectedVersion 1 is a plain conflict there.
      otherTenant: { status: 409, code: 'MEM_CONFLICT' },
    },
    owns: { status: 201 },
    unchanged: (f, id) => expectRecord(f, id),
    after: (f, id) => expectRecord(f, id, 2, 'Overwritten by someone else'),
  }),

  'POST /v1/memories:batch': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('batch')),
    request: (id) => ({ method: 'POST', path: '/v1/memories:batch', body: { items: [overwrite(id)] } }),
    refused: batchItem(409, 'MEM_ID_TAKEN'),
    cells: {
      otherResource: batchItem(403, 'MEM_FORBIDDEN'),
      noGrant: batchItem(403, 'MEM_FORBIDDEN'),
      delegate: batchItem(403, 'MEM_FORBIDDEN'),
      otherTenant: batchItem(409, 'MEM_CONFLICT'),
    },
    owns: batchItem(201),
    unchanged: (f, id) => expectRecord(f, id),
    after: (f, id) => expectRecord(f, id, 2, 'Overwritten by someone else'),
  }),

  'GET /v1/commands/{commandId}': row({
    owner: 'alice',
    setup: async (f) => {
      const id = f.fresh('async');
      const res = await f.rt.api('POST', '/v1/memories', { token: f.alice, headers: { prefer: 'respond-async' }, body: memory({ id, subjectId: `${id}-subject`, visibility: 'private' }) });
      expect(res.status, res.text).toBe(202);
      return String(res.body.commandId);
    },
    request: (commandId) => ({ method: 'GET', path: `/v1/commands/${commandId}` }),
    missing: () => ({ method: 'GET', path: `/v1/commands/${NEVER_ULID}` }),
    refused: NOT_FOUND,
    owns: { status: 200 },
    unchanged: async () => undefined,
  }),

  'GET /v1/memories/{id}': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('read')),
    request: (id) => ({ method: 'GET', path: `/v1/memories/${id}` }),
    missing: () => ({ method: 'GET', path: `/v1/memories/${NEVER}` }),
    refused: NOT_FOUND,
    owns: { status: 200, check: (res) => expect(res.text).toContain('quokka') },
    unchanged: async () => undefined,
  }),

  'GET /v1/memories/{id}/history': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('history')),
    request: (id) => ({ method: 'GET', path: `/v1/memories/${id}/history` }),
    missing: () => ({ method: 'GET', path: `/v1/memories/${NEVER}/history` }),
    refused: NOT_FOUND,
    owns: { status: 200, check: (res) => expect(res.body.versions).toHaveLength(1) },
    unchanged: async () => undefined,
  }),

  // Carol's quarantined team record: Alice reviews maple (a writer never reviews its own).
  'POST /v1/memories/{id}/promote': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('promote'), { visibility: 'team', trust: 'untrusted' }, f.carol),
    request: (id) => ({ method: 'POST', path: `/v1/memories/${id}/promote`, body: { expectedVersion: 1 } }),
    missing: () => ({ method: 'POST', path: `/v1/memories/${NEVER}/promote`, body: { expectedVersion: 1 } }),
    refused: NOT_FOUND,
    owns: { status: 200, check: (res) => expect(res.body.status).toBe('active') },
    unchanged: async (f, id) => expect(await f.rt.state.records.get('acme', id)).toMatchObject({ status: 'quarantined', version: 1 }),
  }),

  'POST /v1/memories/{id}/reject': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('reject'), { visibility: 'team', trust: 'untrusted' }, f.carol),
    request: (id) => ({ method: 'POST', path: `/v1/memories/${id}/reject`, body: { expectedVersion: 1 } }),
    missing: () => ({ method: 'POST', path: `/v1/memories/${NEVER}/reject`, body: { expectedVersion: 1 } }),
    refused: NOT_FOUND,
    owns: { status: 200 },
    unchanged: async (f, id) => expect(await f.rt.state.records.get('acme', id)).toMatchObject({ status: 'quarantined', version: 1 }),
  }),

  'DELETE /v1/memories/{id}': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('delete')),
    request: (id) => ({ method: 'DELETE', path: `/v1/memories/${id}` }),
    missing: () => ({ method: 'DELETE', path: `/v1/memories/${NEVER}` }),
    refused: NOT_FOUND,
    owns: { status: 202 },
    unchanged: async (f, id) => {
      await expectRecord(f, id);
      const jobs = await f.rt.api('GET', '/v1/deletion-jobs?limit=100', { token: f.root });
      expect(jobs.body.items.flatMap((j) => (j as unknown as { recordIds: string[] }).recordIds)).not.toContain(id);
    },
    after: async (f, id) => {
      const res = await f.rt.api('GET', `/v1/memories/${id}`, { token: f.alice });
      expect(res.status).toBe(404);
    },
  }),

  'GET /v1/review/quarantine': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('queue'), { visibility: 'team', trust: 'untrusted' }, f.carol),
    request: () => ({ method: 'GET', path: '/v1/review/quarantine' }),
    refused: { status: 200, check: (res) => expect(res.body.items).toEqual([]) },
    owns: { status: 200 },
    unchanged: async () => undefined,
    after: async (_f, id, res) => expect(ids(res, 'id')).toContain(id),
  }),

  'POST /v1/search': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('search'), { content: 'Zanzibar marmoset 8841' }),
    request: () => ({ method: 'POST', path: '/v1/search', body: { query: 'Zanzibar marmoset', mode: 'lexical' } }),
    // A search that hides matches looks like one that found none (§6.4).
    refused: { status: 200, check: (res) => expect(res.body.items).toEqual([]) },
    owns: { status: 200 },
    unchanged: async () => undefined,
    after: async (_f, id, res) => expect(ids(res, 'recordId')).toContain(id),
  }),

  'POST /v1/packets/{id}/validate': row({
    owner: 'alice',
    setup: async (f) => {
      const id = await aliceWrites(f, f.fresh('packet'), { content: 'Okapi capybara 5531' });
      const res = await f.rt.api('POST', '/v1/search', { token: f.alice, body: { query: 'Okapi capybara', mode: 'lexical' } });
      expect(ids(res, 'recordId')).toContain(id);
      return String(res.body.packetId);
    },
    request: (packetId) => ({ method: 'POST', path: `/v1/packets/${packetId}/validate` }),
    missing: () => ({ method: 'POST', path: `/v1/packets/${NEVER_ULID}/validate` }),
    refused: NOT_FOUND,
    owns: { status: 200, check: (res) => expect(res.body.valid).toBe(true) },
    unchanged: async () => undefined,
  }),

  'GET /v1/subjects/{subjectId}/summary': row({
    owner: 'alice',
    setup: async (f) => {
      const id = await aliceWrites(f, f.fresh('summary'));
      await eventually('summary built', async () => {
        const res = await f.rt.api('GET', `/v1/subjects/${id}-subject/summary`, { token: f.alice });
        return res.body.items.length > 0;
      }, 60_000);
      return id;
    },
    request: (id) => ({ method: 'GET', path: `/v1/subjects/${id}-subject/summary` }),
    refused: { status: 200, check: (res) => expect(res.body.items).toEqual([]) },
    owns: { status: 200, check: (res) => expect(res.text).toContain('quokka') },
    unchanged: async () => undefined,
  }),

  // A forget takes only what the requester may delete: for anyone but Alice, nothing (§8.1).
  'POST /v1/subjects/{subjectId}/forget': row({
    owner: 'alice',
    setup: (f) => aliceWrites(f, f.fresh('forget')),
    request: (id) => ({ method: 'POST', path: `/v1/subjects/${id}-subject/forget`, body: {} }),
    refused: {
      status: 202,
      check: async (res, { persona, f }) => {
        const job = await settledJob(f, String(res.body.jobId), persona === 'otherTenant' ? f.gina : f.root);
        expect(job).toMatchObject({ status: 'verified', recordIds: [] });
      },
    },
    owns: { status: 202 },
    unchanged: (f, id) => expectRecord(f, id),
    after: async (f, id, res) => {
      const job = await settledJob(f, String(res.body.jobId), f.alice);
      expect(job).toMatchObject({ status: 'verified', recordIds: [id] });
      // After a verified forget the history is the never-existing 404 too (§6.4).
      const normalise = (text: string) => text.replace(/"requestId":"[^"]+"/, '"requestId":"-"');
      const gone = await f.rt.api('GET', `/v1/memories/${id}/history`, { token: f.alice });
      const never = await f.rt.api('GET', `/v1/memories/${NEVER}/history`, { token: f.alice });
      expect(gone.status).toBe(404);
      expect(normalise(gone.text)).toBe(normalise(never.text));
    },
  }),

  'GET /v1/deletion-jobs': row({
    owner: 'alice',
    setup: aliceJobOf,
    request: () => ({ method: 'GET', path: '/v1/deletion-jobs?limit=100' }),
    refused: { status: 200, check: async (res, { f }) => expect(ids(res, 'jobId')).not.toContain(await aliceJobOf(f)) },
    owns: { status: 200 },
    unchanged: async () => undefined,
    after: async (_f, jobId, res) => expect(ids(res, 'jobId')).toContain(jobId),
  }),

  'GET /v1/deletion-jobs/{id}': row({
    owner: 'alice',
    setup: aliceJobOf,
    request: (jobId) => ({ method: 'GET', path: `/v1/deletion-jobs/${jobId}` }),
    missing: () => ({ method: 'GET', path: `/v1/deletion-jobs/${NEVER_ULID}` }),
    refused: NOT_FOUND,
    owns: { status: 200, check: (res) => expect(res.body.status).toBe('verified') },
    unchanged: async () => undefined,
  }),

  'GET /v1/deletion-jobs/{id}/receipt': row({
    owner: 'alice',
    setup: aliceJobOf,
    request: (jobId) => ({ method: 'GET', path: `/v1/deletion-jobs/${jobId}/receipt` }),
    missing: () => ({ method: 'GET', path: `/v1/deletion-jobs/${NEVER_ULID}/receipt` }),
    refused: NOT_FOUND,
    owns: { status: 200, check: (res) => expect(res.body.openings).toBeDefined() },
    unchanged: async () => undefined,
  }),

  'POST /v1/grants': row({
    owner: 'root',
    setup: async (f) => f.fresh('grantee'),
    request: (grantee) => ({ method: 'POST', path: '/v1/grants', body: { principal: { id: grantee, kind: 'person' }, resource: MAPLE, role: 'member', purposes: ['support'] } }),
    refused: SCOPE_DENIED,
    // Globex's administrator grants on globex's own maple: acme is untouched.
    cells: { otherTenant: { status: 201 } },
    owns: { status: 201 },
    unchanged: async (f, grantee) => expect(await grantsOf(f, grantee)).toEqual([]),
    after: async (f, grantee, res) => expect((await grantsOf(f, grantee)).map((g) => g.grantId)).toEqual([res.body.grantId]),
  }),

  'DELETE /v1/grants/{id}': row({
    owner: 'root',
    setup: async (f) => {
      const res = await f.rt.api('POST', '/v1/grants', { token: f.root, body: { principal: { id: f.fresh('grantee'), kind: 'person' }, resource: MAPLE, role: 'member', purposes: ['support'] } });
      expect(res.status, res.text).toBe(201);
      return String(res.body.grantId);
    },
    request: (grantId) => ({ method: 'DELETE', path: `/v1/grants/${grantId}` }),
    // A grant the caller may not manage answers as an unknown id does: no id oracle (design §6.2).
    missing: () => ({ method: 'DELETE', path: `/v1/grants/${NEVER_ULID}` }),
    refused: NOT_FOUND,
    owns: { status: 202 },
    unchanged: async (f, grantId) => expect(await f.rt.state.policies.grant('acme', grantId)).not.toBeNull(),
    after: (f, grantId) => grantAbsent(grantId)(f),
  }),

  // The delegator is always the caller's principal: naming Alice is impersonation for anyone else.
  'POST /v1/delegations': row({
    owner: 'aliceSelf',
    setup: async (f) => f.fresh('delegation'),
    request: (delegationId) => ({
      method: 'POST', path: '/v1/delegations',
      body: { delegationId, delegatorId: 'alice', agentId: 'helper', resources: [MAPLE], purposes: ['support'], actions: ['search'] },
    }),
    refused: { status: 403, code: 'MEM_IMPERSONATION' },
    // An agent acting for Alice cannot delegate onwards.
    cells: { delegate: { status: 403, code: 'CAP_ACTION_DENIED' } },
    owns: { status: 201 },
    unchanged: async (f, delegationId) => expect(await f.rt.state.policies.delegation('acme', delegationId)).toBeNull(),
  }),

  'POST /v1/delegations/{id}/revoke': row({
    owner: 'aliceSelf',
    setup: async (f) => {
      const res = await f.rt.api('POST', '/v1/delegations', { token: f.aliceSelf, body: { agentId: 'helper-2', resources: [MAPLE], purposes: ['support'], actions: ['search'] } });
      expect(res.status, res.text).toBe(201);
      return String(res.body.delegationId);
    },
    request: (delegationId) => ({ method: 'POST', path: `/v1/delegations/${delegationId}/revoke`, body: {} }),
    missing: () => ({ method: 'POST', path: `/v1/delegations/${NEVER}/revoke`, body: {} }),
    refused: NOT_FOUND,
    owns: { status: 202 },
    unchanged: async (f, delegationId) => expect(await f.rt.state.policies.delegation('acme', delegationId)).toMatchObject({ revoked: false }),
    after: async (f, delegationId) => expect(await f.rt.state.policies.delegation('acme', delegationId)).toMatchObject({ revoked: true }),
  }),

  // Alice's agent revokes another capability of Alice's; nobody else may but a tenant admin.
  'POST /v1/capabilities/{jti}/revoke': row({
    owner: 'alice',
    setup: async (f) => f.rt.issue({ agentId: 'my-agent', principal: { id: 'alice', kind: 'person' }, scopes: [MAPLE, ACME], actions: ['search'] }, { grants: false }),
    request: (token) => ({ method: 'POST', path: `/v1/capabilities/${claimsOf(token).jti}/revoke`, body: {} }),
    refused: SCOPE_DENIED,
    // Globex's administrator: a jti of another tenant answers 202 like an unknown one and changes nothing.
    cells: { otherTenant: { status: 202 } },
    owns: { status: 202 },
    unchanged: (f, token) => works(f, token),
    after: async (f, token) => {
      const res = await f.rt.api('POST', '/v1/search', { token, body: { query: 'anything' } });
      expect(res.body.code).toBe('CAP_REVOKED');
    },
  }),

  'POST /v1/agents/{id}/revoke': row({
    owner: 'root',
    setup: async (f) => {
      const agentId = f.fresh('doomed');
      return { agentId, token: await f.rt.issue({ agentId, principal: { id: 'carol', kind: 'person' }, scopes: [MAPLE], actions: ['search'] }, { grants: false }) };
    },
    request: ({ agentId }) => ({ method: 'POST', path: `/v1/agents/${agentId}/revoke`, body: {} }),
    refused: SCOPE_DENIED,
    // Globex revokes an agent of that name in globex: acme's agent keeps working.
    cells: { otherTenant: { status: 202 } },
    owns: { status: 202 },
    unchanged: (f, { token }) => works(f, token),
    after: async (f, { token }) => {
      const res = await f.rt.api('POST', '/v1/search', { token, body: { query: 'anything' } });
      expect(res.body.code).toBe('CAP_REVOKED');
    },
  }),

  'POST /v1/legal-holds': row({
    owner: 'root',
    setup: async (f) => f.fresh('hold'),
    request: (holdId) => ({ method: 'POST', path: '/v1/legal-holds', body: { holdId, subjectId: `${holdId}-subject`, reason: 'litigation 2026-7' } }),
    refused: SCOPE_DENIED,
    cells: { otherTenant: { status: 201 } },
    owns: { status: 201 },
    unchanged: async (f, holdId) => expect(await f.rt.state.policies.legalHold('acme', holdId)).toBeNull(),
  }),

  'GET /v1/legal-holds': row({
    owner: 'root',
    setup: async (f) => {
      const holdId = f.fresh('hold-list');
      const res = await f.rt.api('POST', '/v1/legal-holds', { token: f.root, body: { holdId, subjectId: `${holdId}-subject`, reason: 'litigation 2026-8' } });
      expect(res.status, res.text).toBe(201);
      return holdId;
    },
    request: () => ({ method: 'GET', path: '/v1/legal-holds' }),
    refused: SCOPE_DENIED,
    cells: { otherTenant: { status: 200, check: (res) => expect(res.text).not.toContain('litigation 2026-8') } },
    owns: { status: 200 },
    unchanged: async () => undefined,
    after: async (_f, holdId, res) => expect(ids(res, 'holdId')).toContain(holdId),
  }),

  'DELETE /v1/legal-holds/{id}': row({
    owner: 'root',
    setup: async (f) => {
      const holdId = f.fresh('hold-del');
      const res = await f.rt.api('POST', '/v1/legal-holds', { token: f.root, body: { holdId, subjectId: `${holdId}-subject`, reason: 'litigation 2026-9' } });
      expect(res.status, res.text).toBe(201);
      return holdId;
    },
    request: (holdId) => ({ method: 'DELETE', path: `/v1/legal-holds/${holdId}` }),
    refused: SCOPE_DENIED,
    cells: { otherTenant: { status: 404, code: 'MEM_NOT_FOUND' } },
    owns: { status: 202 },
    unchanged: async (f, holdId) => expect(await f.rt.state.policies.legalHold('acme', holdId)).not.toBeNull(),
    after: async (f, holdId) => expect(await f.rt.state.policies.legalHold('acme', holdId)).toBeNull(),
  }),

  'GET /v1/ops/overview': row({
    owner: 'root',
    setup: async () => undefined,
    request: () => ({ method: 'GET', path: '/v1/ops/overview' }),
    refused: SCOPE_DENIED,
    // Globex's own administrator reads the overview of its deployment (no MEMORY_OPS_TENANTS here).
    cells: { otherTenant: { status: 200 } },
    owns: { status: 200 },
    unchanged: async () => undefined,
  }),
};
