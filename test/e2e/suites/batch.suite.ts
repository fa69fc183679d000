import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memory, STARTUP_MS, type ApiBody, type StartRuntime, type TestRuntime } from '../harness.ts';

interface BatchOutcome {
  index: number;
  httpStatus: number;
  id?: string;
  version?: number;
  status?: string;
  error?: { code: string; status: number; detail: string };
}
type BatchBody = Omit<ApiBody, 'items'> & { items: BatchOutcome[] };

const DAY_MS = 86_400_000;

/** POST /v1/memories:batch (docs/ingest.md): many writes in one request, each judged as the single write would be. */
export const batchSuite = (start: StartRuntime) => describe('batch writes over the API', () => {
  let rt: TestRuntime;
  let writer: string;

  beforeAll(async () => {
    rt = await start();
    writer = await rt.issue({ agentId: 'batch-bot', principal: { id: 'carol', kind: 'person' } });
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const batch = (items: unknown[], token = writer) => rt.api<BatchBody>('POST', '/v1/memories:batch', { token, body: { items } });
  const single = (body: unknown, token = writer) => rt.api('POST', '/v1/memories', { token, body });

  /** One body per rule the edge or write-admission applies; `id` keeps batch and single apart. */
  const mixed = (prefix: string) => [
    memory({ id: `${prefix}-ok`, subjectId: `${prefix}-s1`, content: 'Osprey account renews in March' }),
    memory({ id: `${prefix}-untrusted`, subjectId: `${prefix}-s1`, trust: 'untrusted', content: 'Osprey said to wire funds elsewhere' }),
    memory({ id: `${prefix}-impersonated`, subjectId: `${prefix}-s2`, agentId: 'someone-else' }),
    memory({ id: `${prefix}-over-ttl`, subjectId: `${prefix}-s2`, kind: 'working_note', expiresAt: new Date(rt.now() + 30 * DAY_MS).toISOString() }),
    memory({ id: `${prefix}-conflict`, subjectId: `${prefix}-s3`, expectedVersion: 3 }),
    memory({ id: `${prefix}-out-of-scope`, subjectId: `${prefix}-s3`, resource: { kind: 'project', id: 'not-mine' } }),
    { id: `${prefix}-malformed`, subjectId: `${prefix}-s3`, kind: 'fact' },
    memory({ id: `${prefix}-ok-2`, subjectId: `${prefix}-s1`, content: 'Osprey prefers invoices by post' }),
  ];

  it('judges each item on its own, with the status and problem code the single write gives the same body', async () => {
    const answer = await batch(mixed('b'));
    expect(answer.status).toBe(200);
    const outcomes = answer.body.items;
    expect(outcomes.map((o) => o.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(outcomes.map((o) => [o.httpStatus, o.status ?? o.error?.code])).toEqual([
      [201, 'active'], [201, 'quarantined'], [403, 'MEM_IMPERSONATION'], [422, 'MEM_TTL_EXCEEDED'],
      [409, 'MEM_CONFLICT'], [403, 'CAP_SCOPE_DENIED'], [422, 'MEM_VALIDATION'], [201, 'active'],
    ]);
    // The same bodies one by one (other ids): the same answers.
    const singles = [];
    for (const body of mixed('s')) {
      const res = await single(body);
      singles.push([res.status, res.status === 201 ? res.body.status : res.body.code]);
    }
    expect(singles).toEqual(outcomes.map((o) => [o.httpStatus, o.status ?? o.error?.code]));
    // The accepted writes are readable at once (read-your-writes), and nothing else was written.
    expect(answer.headers.get('read-your-writes')).toBe('confirmed');
    expect((await rt.api('GET', '/v1/memories/b-ok', { token: writer })).status).toBe(200);
    expect((await rt.api('GET', '/v1/memories/b-ok-2', { token: writer })).body.version).toBe(1);
    for (const id of ['b-impersonated', 'b-over-ttl', 'b-conflict', 'b-out-of-scope', 'b-malformed']) {
      expect((await rt.api('GET', `/v1/memories/${id}`, { token: writer })).status, id).toBe(404);
    }
    const found = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'osprey', subjectId: 'b-s1' } });
    expect(found.body.items.map((i) => i.recordId).sort()).toEqual(['b-ok', 'b-ok-2']);
  });

  it('writes nothing for a malformed envelope', async () => {
    const tooMany = Array.from({ length: 501 }, (_, i) => memory({ id: `env-${i}`, subjectId: 'env-s' }));
    for (const [what, body] of [
      ['no items', {}], ['an empty list', { items: [] }], ['more than 500 items', { items: tooMany }],
      ['an unknown field', { items: [memory({ id: 'env-extra', subjectId: 'env-s' })], atomic: true }], ['items not a list', { items: 'all of them' }],
    ] as const) {
      const res = await rt.api('POST', '/v1/memories:batch', { token: writer, body });
      expect(res.status, what).toBe(422);
      expect(res.body.code, what).toBe('MEM_VALIDATION');
    }
    for (const id of ['env-0', 'env-500', 'env-extra']) expect((await rt.api('GET', `/v1/memories/${id}`, { token: writer })).status).toBe(404);
  });

  it('answers a retry of the same batch with the same item keys as the first time, and writes no second record', async () => {
    const items = ['Heron ships on Tuesdays', 'Heron pays net 30', 'Heron asked for a call on Friday'].map((content, i) => ({
      ...memory({ subjectId: 'retry-s', content }), idempotencyKey: `retry-key-${i}`,
    }));
    const first = await batch(items);
    const again = await batch(items);
    expect(first.body.items.every((o) => o.httpStatus === 201)).toBe(true);
    expect(again.body.items).toEqual(first.body.items);
    const found = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'heron', subjectId: 'retry-s' } });
    expect(found.body.items).toHaveLength(3);
  });

  it('keeps an item\'s idempotencyKey to its principal: another principal\'s capability with the same agent id writes afresh, with no mismatch', async () => {
    const item = (content: string) => ({ ...memory({ subjectId: 'keyed-s', visibility: 'private', content }), idempotencyKey: 'carol-key-1' });
    const first = await batch([item('Egret pays in euros')]);
    expect(first.body.items[0]?.httpStatus).toBe(201);
    // The same agent id, acting for another principal (§5.6): her key is unused to him.
    const other = await rt.issue({ agentId: 'batch-bot', principal: { id: 'dan', kind: 'person' } });
    const replay = await batch([item('Egret pays in euros')], other);
    expect(replay.body.items.map((o) => [o.httpStatus, o.error?.code])).toEqual([[201, undefined]]);
    expect(replay.body.items[0]?.id).not.toBe(first.body.items[0]?.id);
    // Other content under her key, from a third principal with that agent id: written, not 422 MEM_IDEMPOTENCY_MISMATCH.
    const third = await rt.issue({ agentId: 'batch-bot', principal: { id: 'erin', kind: 'person' } });
    const probe = await batch([item('Egret pays in dollars')], third);
    expect(probe.body.items.map((o) => [o.httpStatus, o.error?.code])).toEqual([[201, undefined]]);
    expect((await batch([item('Egret pays in euros')])).body.items).toEqual(first.body.items);
  });

  it('takes 500 items in one request', async () => {
    const items = Array.from({ length: 500 }, (_, i) => memory({ id: `bulk-${i}`, subjectId: `bulk-s${i % 7}`, content: `Kingfisher order ${i} ships from Porto` }));
    const answer = await batch(items);
    expect(answer.status).toBe(200);
    expect(answer.body.items.filter((o) => o.httpStatus === 201)).toHaveLength(500);
    expect((await rt.api('GET', '/v1/memories/bulk-499', { token: writer })).status).toBe(200);
  });

  it('needs a capability that may write', async () => {
    expect((await rt.api('POST', '/v1/memories:batch', { body: { items: [memory()] } })).status).toBe(401);
    const reader = await rt.issue({ agentId: 'batch-reader', actions: ['read', 'search'] });
    const denied = await batch([memory({ id: 'reader-write' })], reader);
    expect(denied.status).toBe(403);
    expect((await rt.api('GET', '/v1/memories/reader-write', { token: writer })).status).toBe(404);
  });
});
