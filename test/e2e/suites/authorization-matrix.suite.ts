import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '@gm/contracts';
import { eventually, memory, STARTUP_MS, type ApiResponse, type StartRuntime, type TestRuntime } from '../harness.ts';

/**
 * The authorization matrix (design §9.1): every operation of the authorization table that takes a
 * capability, called as each kind of caller against one principal's (alice's) records, job,
 * packet and commands. Each cell gives the expected answer; a refusal that §6.4 requires to be
 * indistinguishable is compared byte for byte (bar `requestId`) with the answer for an id that
 * never existed; and nothing a caller may not change has changed afterwards. A table operation
 * without a row here fails the suite.
 */
const PERSONAS = ['owner', 'sameResource', 'otherResource', 'otherTenant', 'noGrant', 'sameAgentOtherPrincipal', 'delegateOutside', 'revoked', 'expired'] as const;
type Persona = (typeof PERSONAS)[number];

/** A status, `hidden` (the uniform 404 of a never-existing id), or a check of the answer. */
type Expect = number | 'hidden' | ((res: ApiResponse) => void);
type Row = { call: (token: string) => Promise<ApiResponse>; never?: (token: string) => Promise<ApiResponse>; expect: Record<Persona, Expect> };

const MAPLE = { kind: 'project', id: 'maple' } as const;
const OAK = { kind: 'project', id: 'oak' } as const;
const MEMBER = ['search', 'read', 'cite', 'write', 'request_delete', 'review', 'promote'] as const;

export const authorizationMatrixSuite = (start: StartRuntime) => describe('the authorization matrix: every operation as every kind of caller', () => {
  let rt: TestRuntime;
  const tokens = {} as Record<Persona, string>;
  let aliceSelf = '';
  let siblingJti = '';
  let packetId = '';
  let commandId = '';
  let jobId = '';

  const jtiOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti: string }).jti;
  const itemIds = (res: ApiResponse) => (res.body.items ?? []).map((i) => i.recordId ?? i.id ?? '');

  beforeAll(async () => {
    rt = await start({ MEMORY_RATE_LIMIT_PER_MINUTE: '100000' });
    const alice = { id: 'alice', kind: 'person' } as const;
    tokens.owner = await rt.issue({ agentId: 'my-agent', principal: alice, actions: [...MEMBER] });
    aliceSelf = await rt.issue({ agentId: 'alice', principal: alice, actions: [...MEMBER] });
    // A second capability of the owner's agent for alice: the owner's own to revoke, nobody else's.
    siblingJti = jtiOf(await rt.issue({ agentId: 'my-agent', principal: alice, actions: ['search'] }));
    // The README's pattern: another principal's capability for the same agent id, also a member of maple.
    tokens.sameAgentOtherPrincipal = await rt.issue({ agentId: 'my-agent', principal: { id: 'mallory', kind: 'person' }, actions: [...MEMBER] });
    tokens.sameResource = await rt.issue({ agentId: 'carol-bot', principal: { id: 'carol', kind: 'person' }, actions: [...MEMBER] });
    tokens.otherResource = await rt.issue({ agentId: 'dave-bot', principal: { id: 'dave', kind: 'person' }, scopes: [OAK], actions: [...MEMBER] });
    tokens.otherTenant = await rt.issue({ agentId: 'my-agent', tenant: 'globex', principal: alice, actions: [...MEMBER] });
    tokens.noGrant = await rt.issue({ agentId: 'frank-bot', principal: { id: 'frank', kind: 'person' }, actions: [...MEMBER] }, { grants: false });
    // alice lets helper-bot search maple for her, and nothing else.
    const delegated = await rt.api('POST', '/v1/delegations', { token: aliceSelf, body: { delegationId: 'd-matrix', agentId: 'helper-bot', resources: [MAPLE], purposes: ['support'], actions: ['search'] } });
    expect(delegated.status, delegated.text).toBe(201);
    tokens.delegateOutside = await rt.issue({ agentId: 'helper-bot', principal: alice, actions: [...MEMBER] }, { grants: false });
    tokens.revoked = await rt.issue({ agentId: 'my-agent', principal: alice, actions: [...MEMBER] });
    expect((await rt.api('POST', `/v1/capabilities/${jtiOf(tokens.revoked)}/revoke`, { token: aliceSelf, body: {} })).status).toBe(202);
    tokens.expired = await rt.issue({ agentId: 'my-agent', principal: alice, actions: [...MEMBER], ttlSeconds: 1 });

    const write = async (body: Record<string, unknown>) => {
      const res = await rt.api('POST', '/v1/memories', { token: tokens.owner, body: memory({ subjectId: 'cust-mx', ...body }) });
      expect(res.status, res.text).toBe(201);
    };
    await write({ id: 'mx-private', visibility: 'private', content: 'Matrix private note of alice about kestrels' });
    await write({ id: 'mx-team', content: 'Matrix team note about kestrels' });
    await write({ id: 'mx-quar', trust: 'untrusted', content: 'Matrix quarantined note about kestrels' });
    await write({ id: 'fx-private', subjectId: 'cust-fx', visibility: 'private', content: 'Forget probe private' });
    await write({ id: 'mx-del', subjectId: 'cust-del', content: 'Matrix record to delete' });
    const packet = await rt.api('POST', '/v1/search', { token: tokens.owner, body: { query: 'kestrels' } });
    packetId = String(packet.body.packetId);
    const accepted = await rt.api('POST', '/v1/memories', { token: tokens.owner, headers: { prefer: 'respond-async' }, body: memory({ id: 'mx-async', subjectId: 'cust-mx', content: 'Matrix async note' }) });
    commandId = String((accepted.body as { commandId?: string }).commandId);
    jobId = String((await rt.api('DELETE', '/v1/memories/mx-del', { token: tokens.owner })).body.jobId);
    await eventually('the owner\'s job verified', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: tokens.owner });
      return res.body.status === 'verified' ? true : undefined;
    }, 30_000);
    await eventually('the owner\'s receipt', async () => ((await rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: tokens.owner })).status === 200 ? true : undefined), 30_000);
    await rt.advance(2_000);
  }, STARTUP_MS);
  afterAll(async () => rt?.close(), STARTUP_MS);

  const api = (method: string, route: string, body?: unknown) => (token: string) => rt.api(method, route, { token, ...(body === undefined ? {} : { body }) });
  const unauthenticated = { revoked: 401, expired: 401 } as const;
  /** Everyone but the owner gets `others`; the two dead capabilities 401. */
  const ownerOnly = (owner: Expect, others: Expect = 'hidden'): Record<Persona, Expect> => ({
    owner, sameResource: others, otherResource: others, otherTenant: others, noGrant: others, sameAgentOtherPrincipal: others, delegateOutside: others, ...unauthenticated,
  });
  const everyone = (status: Expect): Record<Persona, Expect> => ({ ...ownerOnly(status, status) });
  const without = (hidden: readonly string[]) => (res: ApiResponse) => {
    expect(res.status, res.text).toBe(200);
    for (const id of hidden) expect(itemIds(res)).not.toContain(id);
  };
  const overwrite = { id: 'mx-private', expectedVersion: 1, visibility: 'private', subjectId: 'cust-mx', content: 'overwritten' };
  const batchItem = (status: number) => (res: ApiResponse) => expect((res.body.items[0] as unknown as { httpStatus: number }).httpStatus).toBe(status);

  const MATRIX: Partial<Record<keyof typeof OPERATIONS, Row>> = {
    'POST /v1/memories': {
      call: api('POST', '/v1/memories', memory(overwrite)),
      // Another tenant writes in its own tenant, where that id names nothing (a stale version there): nothing of acme's.
      expect: { owner: 201, sameResource: 409, otherResource: 403, otherTenant: 409, noGrant: 403, sameAgentOtherPrincipal: 409, delegateOutside: 403, ...unauthenticated },
    },
    // The owner's batch comes after its own single write: a stale version (409), which only a writer that may see the record gets.
    'POST /v1/memories:batch': {
      call: api('POST', '/v1/memories:batch', { items: [memory(overwrite)] }),
      expect: { owner: batchItem(409), sameResource: batchItem(409), otherResource: batchItem(403), otherTenant: batchItem(409), noGrant: batchItem(403), sameAgentOtherPrincipal: batchItem(409), delegateOutside: batchItem(403), ...unauthenticated },
    },
    'GET /v1/commands/{commandId}': { call: (t) => api('GET', `/v1/commands/${commandId}`)(t), never: api('GET', '/v1/commands/never-sent'), expect: ownerOnly(200) },
    'GET /v1/memories/{id}': { call: api('GET', '/v1/memories/mx-private'), never: api('GET', '/v1/memories/never-written'), expect: ownerOnly(200) },
    'GET /v1/memories/{id}/history': { call: api('GET', '/v1/memories/mx-private/history'), never: api('GET', '/v1/memories/never-written/history'), expect: ownerOnly(200) },
    // A stale version: the reviewers of maple get as far as the decider (409), nobody else learns the record exists.
    'POST /v1/memories/{id}/promote': {
      call: api('POST', '/v1/memories/mx-quar/promote', { expectedVersion: 99 }), never: api('POST', '/v1/memories/never-written/promote', { expectedVersion: 99 }),
      expect: { ...ownerOnly(409), sameResource: 409, sameAgentOtherPrincipal: 409 },
    },
    'POST /v1/memories/{id}/reject': {
      call: api('POST', '/v1/memories/mx-quar/reject', { expectedVersion: 99 }), never: api('POST', '/v1/memories/never-written/reject', { expectedVersion: 99 }),
      expect: { ...ownerOnly(409), sameResource: 409, sameAgentOtherPrincipal: 409 },
    },
    'DELETE /v1/memories/{id}': { call: api('DELETE', '/v1/memories/mx-private'), never: api('DELETE', '/v1/memories/never-written'), expect: ownerOnly(202) },
    'GET /v1/review/quarantine': { call: api('GET', '/v1/review/quarantine'), expect: { ...everyone(without(['mx-quar', 'mx-private'])), owner: 200, sameResource: 200, sameAgentOtherPrincipal: 200 } },
    // The delegate searches for alice, within its delegation: alice's own records are hers to find.
    'POST /v1/search': { call: api('POST', '/v1/search', { query: 'kestrels' }), expect: { ...everyone(without(['mx-private'])), owner: 200, delegateOutside: 200 } },
    'POST /v1/packets/{id}/validate': { call: (t) => api('POST', `/v1/packets/${packetId}/validate`)(t), never: api('POST', '/v1/packets/never-issued/validate'), expect: ownerOnly(200) },
    'GET /v1/subjects/{subjectId}/summary': {
      call: api('GET', '/v1/subjects/cust-mx/summary'),
      expect: { ...everyone((res) => {
        expect(res.status).toBe(200);
        for (const item of res.body.items as unknown as Array<{ derivedFrom: string[] }>) expect(item.derivedFrom).not.toContain('mx-private');
      }), owner: 200, delegateOutside: 200 },
    },
    // 202 for every caller; what the job took is checked below (never alice's private record).
    'POST /v1/subjects/{subjectId}/forget': { call: api('POST', '/v1/subjects/cust-fx/forget', {}), expect: everyone(202) },
    'GET /v1/deletion-jobs': {
      call: api('GET', '/v1/deletion-jobs'),
      expect: { ...everyone((res) => {
        expect(res.status).toBe(200);
        expect(res.body.items.map((j) => (j as unknown as { jobId: string }).jobId)).not.toContain(jobId);
      }), owner: (res) => expect(res.body.items.map((j) => (j as unknown as { jobId: string }).jobId)).toContain(jobId) },
    },
    'GET /v1/deletion-jobs/{id}': { call: (t) => api('GET', `/v1/deletion-jobs/${jobId}`)(t), never: api('GET', '/v1/deletion-jobs/never-opened'), expect: ownerOnly(200) },
    'GET /v1/deletion-jobs/{id}/receipt': { call: (t) => api('GET', `/v1/deletion-jobs/${jobId}/receipt`)(t), never: api('GET', '/v1/deletion-jobs/never-opened/receipt'), expect: ownerOnly(200) },
    // None of these callers administers anything: their capabilities carry no `admin`.
    'POST /v1/grants': { call: api('POST', '/v1/grants', { principal: { id: 'mallory', kind: 'person' }, resource: MAPLE, role: 'admin', purposes: ['support'] }), expect: everyone(403) },
    'DELETE /v1/grants/{id}': { call: api('DELETE', '/v1/grants/h.acme.alice.project.maple.member.support'), expect: everyone(403) },
    'POST /v1/delegations': { call: api('POST', '/v1/delegations', { agentId: 'x-bot', resources: [MAPLE], purposes: ['support'], actions: ['search'] }), expect: everyone(403) },
    'POST /v1/delegations/{id}/revoke': { call: api('POST', '/v1/delegations/d-matrix/revoke', {}), expect: everyone(404) },
    // The owner's agent's own capabilities for alice are its to revoke; not the same agent id's for mallory, not alice's delegate's.
    'POST /v1/capabilities/{jti}/revoke': { call: (t) => api('POST', `/v1/capabilities/${siblingJti}/revoke`, {})(t), expect: ownerOnly(202, 403) },
    'POST /v1/agents/{id}/revoke': { call: api('POST', '/v1/agents/my-agent/revoke', {}), expect: everyone(403) },
    'POST /v1/legal-holds': { call: api('POST', '/v1/legal-holds', { subjectId: 'cust-mx', reason: 'r' }), expect: everyone(403) },
    'GET /v1/legal-holds': { call: api('GET', '/v1/legal-holds'), expect: everyone(403) },
    'DELETE /v1/legal-holds/{id}': { call: api('DELETE', '/v1/legal-holds/any-hold'), expect: everyone(403) },
    'GET /v1/ops/overview': { call: api('GET', '/v1/ops/overview'), expect: everyone(403) },
  };

  it('has a row for every operation of the table that takes a capability', () => {
    const declared = Object.entries(OPERATIONS).filter(([key, guard]) => guard.auth === 'capability' && !key.startsWith('KAFKA ')).map(([key]) => key);
    expect(declared.filter((key) => !(key in MATRIX))).toEqual([]);
  });

  /** Calls every row as `persona` and checks its cell. */
  async function column(persona: Persona): Promise<void> {
    for (const [key, row] of Object.entries(MATRIX)) {
      const expected = row.expect[persona];
      const res = await row.call(tokens[persona]);
      const cell = `${key} as ${persona}: ${res.status} ${res.text.slice(0, 300)}`;
      if (expected === 'hidden') {
        if (row.never === undefined) throw new Error(`${key}: a hidden cell needs a never-existing call`);
        const never = await row.never(tokens[persona]);
        expect(res.status, cell).toBe(404);
        expect({ ...res.body, requestId: '' }, cell).toEqual({ ...never.body, requestId: '' });
      } else if (typeof expected === 'number') {
        expect(res.status, cell).toBe(expected);
      } else {
        expected(res);
      }
    }
  }

  // The owner last: its calls change what the others' must not have changed.
  for (const persona of PERSONAS.filter((p) => p !== 'owner')) {
    it(`answers ${persona} as the matrix says and lets it change nothing of alice's`, async () => {
      await column(persona);
      const mine = await rt.api('GET', '/v1/memories/mx-private', { token: tokens.owner });
      expect([mine.status, mine.body.version, mine.body.content]).toEqual([200, 1, 'Matrix private note of alice about kestrels']);
      expect((await rt.api('GET', '/v1/memories/fx-private', { token: tokens.owner })).status).toBe(200);
      expect((await rt.api('POST', '/v1/search', { token: aliceSelf, body: { query: 'x' } })).status).toBe(200);
    }, 60_000);
  }

  it('took nothing of alice\'s private record in anybody else\'s forget', async () => {
    const jobs = await rt.api('GET', '/v1/deletion-jobs', { token: tokens.owner });
    expect(jobs.status).toBe(200);
    for (const persona of ['sameResource', 'sameAgentOtherPrincipal', 'noGrant'] as const) {
      const listed = await rt.api('GET', '/v1/deletion-jobs', { token: tokens[persona] });
      for (const job of listed.body.items as unknown as Array<{ recordIds: string[] }>) expect(job.recordIds).not.toContain('fx-private');
    }
  });

  it('answers the owner as the matrix says', async () => {
    await column('owner');
  }, 60_000);
});
