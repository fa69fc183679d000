import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '@gm/contracts';
import { memory, STARTUP_MS, type ApiResponse, type StartRuntime } from '../harness.ts';
import { ACME, BIRCH, MAPLE, PERSONAS, aliceWrites, buildFixture, expectRecord, settledJob, tokenOf, type Fixture, type Persona } from './authorization-matrix.fixture.ts';
import { ROWS, type BoundRow, type Cell, type Req } from './authorization-matrix.rows.ts';

/** Every operation of the authorization table that a capability calls (the Kafka ingest is the ingest suite's). */
const GUARDED = Object.entries(OPERATIONS)
  .filter(([key, guard]) => guard.auth === 'capability' && key !== 'KAFKA memory.ingest')
  .map(([key]) => key)
  .sort();

const normalise = (text: string) => text.replace(/"requestId":"[^"]+"/, '"requestId":"-"');

/**
 * The authorization matrix (design §9.1, §6.4): every reading and mutating operation of
 * OPERATIONS, called as the owner and as each of eight others — a member of the same resource,
 * a member of another, another tenant's administrator, a principal with no grant, the same
 * agent id under another principal, a delegate outside its delegation, a revoked and an
 * expired capability. Each call must get its expected answer; a refusal must change nothing
 * (the row's own check, and the tenant's policy revision), and where §6.4 asks for it must be
 * byte for byte the answer for something that never existed. A table entry without a row, or a
 * row without a table entry, fails. Then the security review's findings, one by one.
 */
export const authorizationMatrixSuite = (start: StartRuntime) => describe('authorization matrix: every operation as every persona', () => {
  let f: Fixture;

  beforeAll(async () => {
    // Hundreds of calls by a handful of principals: no rate limit may stand in for a refusal.
    f = await buildFixture(await start({ MEMORY_RATE_LIMIT_PER_MINUTE: '100000' }));
  }, STARTUP_MS);
  afterAll(async () => f.rt.close(), STARTUP_MS);

  const call = (req: Req, token: string) =>
    f.rt.api(req.method, req.path, { token, ...(req.body === undefined ? {} : { body: req.body }), ...(req.headers ? { headers: req.headers } : {}) });

  /** One cell: the answer, the never-existing twin where uniform, the cell's own check. */
  const expectCell = async (bound: BoundRow, persona: Persona, token: string, cell: Cell): Promise<ApiResponse> => {
    const res = await call(bound.request, token);
    expect(res.status, res.text).toBe(cell.status);
    if (cell.code !== undefined) expect(res.body.code, res.text).toBe(cell.code);
    if (cell.uniform) {
      if (bound.missing === undefined) throw new Error('a uniform cell needs the never-existing request');
      const never = await call(bound.missing, token);
      expect(normalise(res.text), 'byte for byte the answer for what never existed').toBe(normalise(never.text));
    }
    await cell.check?.(res, { persona, f });
    return res;
  };

  it('has a row for every capability-guarded operation of OPERATIONS, and none for an undeclared one', () => {
    expect(Object.keys(ROWS).sort()).toEqual(GUARDED);
  });

  for (const key of [...new Set([...GUARDED, ...Object.keys(ROWS)])].sort()) {
    it(key, async () => {
      const row = ROWS[key];
      if (row === undefined) throw new Error(`${key} is in OPERATIONS but has no row in the authorization matrix`);
      if (!GUARDED.includes(key)) throw new Error(`${key} has a matrix row but no declaration in OPERATIONS`);
      const failures: string[] = [];
      let bound = await row.bind(f);
      for (const persona of PERSONAS.filter((p) => p !== 'owner')) {
        const revision = await f.rt.state.policyRevisions.current('acme');
        try {
          await expectCell(bound, persona, tokenOf(f, persona, row.owner), row.cell(persona));
          await bound.unchanged();
          expect(await f.rt.state.policyRevisions.current('acme'), 'acme\'s policy revision').toBe(revision);
        } catch (err) {
          failures.push(`${key} as ${persona}: ${err instanceof Error ? err.message : String(err)}`);
          // A fresh target, so one hole does not show up again as the next persona's.
          bound = await row.bind(f);
        }
      }
      try {
        const res = await expectCell(bound, 'owner', tokenOf(f, 'owner', row.owner), row.owns);
        await bound.after(res);
      } catch (err) {
        failures.push(`${key} as owner: ${err instanceof Error ? err.message : String(err)}`);
      }
      expect(failures).toEqual([]);
    }, 120_000);
  }

  describe('the security review\'s findings', () => {
    it('a forget by a principal with no grant purges nothing: the records read after its job verified, which names none', async () => {
      const subjectId = f.fresh('victim');
      const privateId = await aliceWrites(f, f.fresh('victim-private'), { subjectId });
      const teamId = await aliceWrites(f, f.fresh('victim-team'), { subjectId, visibility: 'team' });
      const res = await f.rt.api('POST', `/v1/subjects/${subjectId}/forget`, { token: f.nora, body: {} });
      expect(res.status).toBe(202);
      expect(await settledJob(f, String(res.body.jobId), f.root)).toMatchObject({ status: 'verified', recordIds: [] });
      await expectRecord(f, privateId);
      await expectRecord(f, teamId);
    });

    it('Mallory, with Alice\'s agent id, cannot supersede Alice\'s private record, nor tell it from one that never existed', async () => {
      const target = await aliceWrites(f, f.fresh('supersede'));
      const attempt = (token: string, resource: typeof MAPLE | typeof BIRCH, supersedesId: string, subjectId: string) => f.rt.api('POST', '/v1/memories', {
        token, body: memory({ id: f.fresh('correction'), subjectId, resource, visibility: 'private', supersedesId, content: 'Someone corrects Alice' }),
      });
      // The right subject, another subject, an id that never existed: one answer (§5.10, §6.4),
      // for Mallory and for Bob, who may read nothing of maple.
      const answers: ApiResponse[] = [];
      for (const [token, resource] of [[f.mallory, MAPLE], [f.bob, BIRCH]] as const) {
        answers.push(await attempt(token, resource, target, `${target}-subject`), await attempt(token, resource, target, 'someone-else'));
      }
      answers.push(await attempt(f.mallory, MAPLE, 'mx-never-existed', `${target}-subject`));
      expect(answers[0]?.status, answers[0]?.text).toBeGreaterThanOrEqual(400);
      expect(answers.map((res) => normalise(res.text))).toEqual(answers.map(() => normalise(answers[4]?.text ?? '')));
      await expectRecord(f, target);
      expect(await f.rt.state.records.get('acme', target)).toMatchObject({ status: 'active' });
    });

    it('a writer that may read nothing of maple gets one MEM_ID_TAKEN for an id of another partition, of another subject and of a forgotten record', async () => {
      const held = await aliceWrites(f, f.fresh('held'), { subjectId: 'jane.doe@example.com', visibility: 'team' });
      const forgotten = await aliceWrites(f, f.fresh('forgotten'), { subjectId: 'john.doe@example.com', visibility: 'team' });
      const forget = await f.rt.api('POST', '/v1/subjects/john.doe@example.com/forget', { token: f.alice, body: {} });
      expect((await settledJob(f, String(forget.body.jobId), f.alice)).status).toBe('verified');
      const bobWrites = (id: string, subjectId: string) =>
        f.rt.api('POST', '/v1/memories', { token: f.bob, body: memory({ id, subjectId, resource: BIRCH, content: 'Bob guesses' }) });
      const answers = [
        await bobWrites(held, 'jane.doe@example.com'),
        await bobWrites(held, 'someone.else@example.com'),
        await bobWrites(forgotten, 'john.doe@example.com'),
        await bobWrites(forgotten, 'someone.else@example.com'),
      ];
      for (const res of answers) expect(res.body.code, res.text).toBe('MEM_ID_TAKEN');
      expect(new Set(answers.map((res) => `${res.status} ${normalise(res.text)}`)).size).toBe(1);
    });

    it('the administrator of a made-up resource it bootstrapped is no tenant administrator', async () => {
      const madeUp = { kind: 'project' as const, id: f.fresh('made-up') };
      const eve = await f.rt.issue({ agentId: 'eve-bot', principal: { id: 'eve', kind: 'person' }, scopes: [madeUp, ACME, MAPLE], actions: ['admin', 'request_delete'] }, { grants: false });
      const bootstrap = await f.rt.api('POST', '/v1/grants', { token: eve, body: { principal: { id: 'eve', kind: 'person' }, resource: madeUp, role: 'admin', purposes: ['support'] } });
      expect(bootstrap.status, bootstrap.text).toBe(201);
      const revision = await f.rt.state.policyRevisions.current('acme');
      for (const [method, path, body] of [
        ['POST', '/v1/legal-holds', { subjectId: 'anyone', reason: 'made up' }],
        ['GET', '/v1/legal-holds', undefined],
        ['GET', '/v1/ops/overview', undefined],
        ['POST', '/v1/agents/my-agent/revoke', {}],
        ['POST', '/v1/grants', { principal: { id: 'eve', kind: 'person' }, resource: ACME, role: 'admin', purposes: ['support'] }],
        ['POST', '/v1/grants', { principal: { id: 'eve', kind: 'person' }, resource: MAPLE, role: 'admin', purposes: ['support'] }],
      ] as const) {
        const res = await f.rt.api(method, path, { token: eve, ...(body === undefined ? {} : { body }) });
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(403);
        expect(res.body.code).toBe('CAP_SCOPE_DENIED');
      }
      expect(await f.rt.state.policyRevisions.current('acme')).toBe(revision);
      // Nor does it read others' deletion jobs.
      const aliceJob = await f.rt.api('POST', `/v1/subjects/${f.fresh('eve-probe')}/forget`, { token: f.alice, body: {} });
      const seen = await f.rt.api('GET', `/v1/deletion-jobs/${String(aliceJob.body.jobId)}`, { token: eve });
      expect(seen.status).toBe(404);
      const listed = await f.rt.api('GET', '/v1/deletion-jobs?limit=100', { token: eve });
      expect(listed.body.items).toEqual([]);
    });
  });
});
