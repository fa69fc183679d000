import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsistencyTokens } from '@gm/retrieval-broker';
import { memory, STARTUP_MS, type StartRuntime, type TestRuntime } from '../harness.ts';

/** The positions a token names (tests read the payload; clients treat tokens as opaque). */
function positionsOf(token: string): { e: Array<[number, number]>; c: Array<[number, number]> } {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { e: Array<[number, number]>; c: Array<[number, number]> };
}

/** Consistency tokens (docs/ingest.md): read-your-writes and monotonic reads per token, and no wait on a bad one. */
export const consistencySuite = (start: StartRuntime) => describe('consistency tokens over the API', () => {
  let rt: TestRuntime;
  let writer: string;

  beforeAll(async () => {
    // A short bound, so that a read ahead of the projections answers its 503 quickly; longer than
    // the summary-builder's linger (1 s), which a summary read with a token waits out.
    rt = await start({ MEMORY_READ_YOUR_WRITES_TIMEOUT: '3s' });
    writer = await rt.issue({ agentId: 'token-bot' });
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const withToken = (token: string) => ({ 'consistency-token': token });

  it('answers every accepted mutation with a token that a read can send', async () => {
    const written = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ct-1', subjectId: 'ct-s1', content: 'Plover renews in May' }) });
    expect(written.status).toBe(201);
    const token = written.headers.get('consistency-token') ?? '';
    expect(token).toMatch(/^ct1\./);
    expect(positionsOf(token).e.length).toBe(1);
    for (const [method, route, body] of [
      ['GET', '/v1/memories/ct-1', undefined], ['POST', '/v1/search', { query: 'plover', subjectId: 'ct-s1' }], ['GET', '/v1/subjects/ct-s1/summary', undefined],
    ] as const) {
      const read = await rt.api(method, route, { token: writer, headers: withToken(token), ...(body ? { body } : {}) });
      expect(read.status, route).toBe(200);
    }
    const batch = await rt.api('POST', '/v1/memories:batch', { token: writer, body: { items: [memory({ id: 'ct-b', subjectId: 'ct-s2' })] } });
    expect(batch.body.consistencyToken).toBe(batch.headers.get('consistency-token'));
    const deleted = await rt.api('DELETE', '/v1/memories/ct-b', { token: writer });
    expect(deleted.headers.get('consistency-token')).toMatch(/^ct1\./);
  });

  it('answers the job of a just-accepted forget at once to a read that sends its token, never a 404 for it', async () => {
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ct-f', subjectId: 'ct-forget' }) });
    const forget = await rt.api('POST', '/v1/subjects/ct-forget/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    const job = await rt.api('GET', `/v1/deletion-jobs/${forget.body.jobId}`, { token: writer, headers: withToken(forget.headers.get('consistency-token') ?? '') });
    expect(job.status).toBe(200);
    expect(job.body.recordIds).toEqual(['ct-f']);
  });

  it('carries a session forward: a write that sends a token answers one that covers both', async () => {
    const first = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ct-m1', subjectId: 'ct-m-a' }) });
    const firstToken = first.headers.get('consistency-token') ?? '';
    // Another subject, so most likely another partition: the merged token names both.
    const second = await rt.api('POST', '/v1/memories', { token: writer, headers: withToken(firstToken), body: memory({ id: 'ct-m2', subjectId: 'ct-m-zz' }) });
    const merged = new Map(positionsOf(second.headers.get('consistency-token') ?? '').e);
    for (const [partition, offset] of positionsOf(firstToken).e) expect(merged.get(partition)).toBeGreaterThanOrEqual(offset);
  });

  it('refuses a forged, altered or foreign token with a 400, before any wait and before any write', async () => {
    const written = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ct-f', subjectId: 'ct-s3' }) });
    const genuine = written.headers.get('consistency-token') ?? '';
    const [prefix, payload] = genuine.split('.');
    const foreignWriter = await rt.issue({ agentId: 'other-bot', tenant: 'globex', scopes: [{ kind: 'project', id: 'maple' }] });
    const foreign = (await rt.api('POST', '/v1/memories', { token: foreignWriter, body: memory({ id: 'ct-g', subjectId: 'ct-s3' }) })).headers.get('consistency-token') ?? '';
    const otherDeployment = new ConsistencyTokens('gmi_not-this-deployments-credential-at-all').issue({ tenant: 'acme', events: new Map([[0, 0]]), commands: new Map() });
    for (const [what, token] of [
      ['garbage', 'garbage'], ['an altered mac', `${prefix}.${payload}.AAAA`], ['another tenant', foreign], ['another deployment', otherDeployment],
    ] as const) {
      const read = await rt.api('GET', '/v1/memories/ct-f', { token: writer, headers: withToken(token) });
      expect([read.status, read.body.code], what).toEqual([400, 'MEM_INVALID_CONSISTENCY_TOKEN']);
      const write = await rt.api('POST', '/v1/memories', { token: writer, headers: withToken(token), body: memory({ id: `ct-never-${what.replaceAll(' ', '-')}`, subjectId: 'ct-s3' }) });
      expect(write.status, what).toBe(400);
      expect((await rt.api('GET', `/v1/memories/ct-never-${what.replaceAll(' ', '-')}`, { token: writer })).status, what).toBe(404);
    }
  });

  it('answers a retriable 503 when the projections have not passed the token within the bound', async () => {
    // A genuine token of this deployment, naming a position the log has not reached.
    const ahead = new ConsistencyTokens(rt.issuerCredential()).issue({ tenant: 'acme', events: new Map([[0, 10_000_000]]), commands: new Map() });
    const read = await rt.api('GET', '/v1/memories/ct-1', { token: writer, headers: withToken(ahead) });
    expect([read.status, read.body.code]).toEqual([503, 'MEM_NOT_YET_CONSISTENT']);
  });
});
