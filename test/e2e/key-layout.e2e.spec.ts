import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memory, startTestRuntime, STARTUP_MS, type EmbeddedTestRuntime } from './harness.ts';

/**
 * A data directory from before the injective key layout (design §4) is migrated at start by a
 * replay of its log: the start says so, and what was only readable under the old keys reads again.
 */
describe('the state store key layout (embedded)', () => {
  let rt: EmbeddedTestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime();
  }, STARTUP_MS);
  afterAll(async () => rt.close());

  it('migrates a directory without the layout mark by replaying its log, once, with a line saying so', async () => {
    const writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    // An id holding ':' is one whose keys the encoding changed.
    expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'urn:case:7', content: 'Layout probe record' }) })).status).toBe(201);
    const versions = async () => ((await rt.api('GET', '/v1/memories/urn:case:7/history', { token: writer })).body as { versions?: unknown[] }).versions ?? [];
    expect(await versions()).toHaveLength(1);

    // An old directory: no layout mark, and its versions where this version's keys do not look.
    const kv = rt.state.kv;
    await kv.del([...(await kv.keys('gm:hist:')), 'gm:key-layout']);
    expect(await versions()).toHaveLength(0);

    const from = rt.logs.lines.length;
    await rt.restart();
    expect(rt.logs.lines.slice(from).some((l) => l.includes('key layout migrated'))).toBe(true);
    expect(await versions()).toHaveLength(1);
    expect(await rt.state.kv.get('gm:key-layout')).toBe('2');

    // Marked: the next start replays nothing.
    const again = rt.logs.lines.length;
    await rt.restart();
    expect(rt.logs.lines.slice(again).some((l) => l.includes('migrating the state store'))).toBe(false);
  }, STARTUP_MS);
});
