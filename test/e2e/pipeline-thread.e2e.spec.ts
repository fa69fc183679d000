import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, openStores, startEmbeddedRuntime, systemClock } from '@gm/embedded';
import { LogSink, STARTUP_MS, memory, startTestRuntime, type EmbeddedTestRuntime } from './harness.ts';

/**
 * The consumer services run in a thread of their own (MEMORY_PIPELINE=thread, the default).
 * What a user sees must not depend on it: the write is readable on return, the services' logs
 * and metrics are the runtime's, the test clock moves both threads, and a failure to start in
 * the thread is the start's failure.
 */
describe('the pipeline thread', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  async function writeAndRead(rt: EmbeddedTestRuntime, id: string): Promise<void> {
    const writer = await rt.issue({ agentId: 'pipe-bot' });
    const written = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id, subjectId: `subj-${id}` }) });
    expect(written.status).toBe(201);
    // Read-your-writes: the projection and the index (the other thread) passed the write on return.
    expect((await rt.api('GET', `/v1/memories/${id}`, { token: writer })).status).toBe(200);
    const found = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'prefers email', subjectId: `subj-${id}` } });
    expect(found.body.items.map((i) => i.recordId)).toEqual([id]);
  }

  for (const pipeline of ['thread', 'inline'] as const) {
    it(`${pipeline}: a write is readable on return, and /metrics counts it once, with the process metrics once and every group's lag`, async () => {
      const rt = await startTestRuntime({ MEMORY_PIPELINE: pipeline });
      dirs.push(rt.dataDir);
      try {
        await writeAndRead(rt, `w-${pipeline}`);
        const metrics = await rt.api('GET', '/metrics');
        const text = String(metrics.body);
        // Counted by write-admission, in whichever thread it runs.
        expect(text).toMatch(/^gm_writes_total\{status="active"\} 1$/m);
        expect(text.match(/^process_resident_memory_bytes /gm)).toHaveLength(1);
        expect(text.match(/^# TYPE gm_writes_total /gm)).toHaveLength(1);
        // Consumer lag of the groups of both threads: the projector's and the API's reply listener.
        expect(text).toMatch(/^gm_consumer_lag\{group="projector",topic="memory\.events",partition="\d+"\} \d+$/m);
        expect(text).toMatch(/^gm_consumer_lag\{group="retrieval-broker\.replies\.embedded",topic="memory\.replies",partition="\d+"\} \d+$/m);
      } finally {
        await rt.close();
      }
    }, STARTUP_MS);
  }

  it("brings the services' log lines to the runtime's log destination", async () => {
    const rt = await startTestRuntime();
    dirs.push(rt.dataDir);
    try {
      await writeAndRead(rt, 'logged');
      const admin = await rt.issue({ agentId: 'ops', scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'request_delete', 'read'] });
      const requested = await rt.api('DELETE', '/v1/memories/logged', { token: admin });
      expect(requested.status).toBe(202);
      // The orchestrator runs in the pipeline thread; its lines name it.
      const orchestrated = () => rt.logs.lines.map((l) => JSON.parse(l) as { service?: string }).filter((l) => l.service === 'deletion-orchestrator');
      await expect.poll(() => orchestrated().length, { timeout: 10_000 }).toBeGreaterThan(0);
    } finally {
      await rt.close();
    }
  }, STARTUP_MS);

  it('refuses a clock that it cannot share with the thread, and starts with it inline', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-pipe-'));
    dirs.push(dataDir);
    const env = { MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'silent' };
    const plainClock = { now: () => new Date() };
    await expect(startEmbeddedRuntime(loadConfig(env), { clock: plainClock })).rejects.toThrow(ConfigError);
    // Nothing was left holding the data directory.
    const inline = await startEmbeddedRuntime(loadConfig({ ...env, MEMORY_PIPELINE: 'inline' }), { clock: plainClock });
    await inline.close();
  }, STARTUP_MS);

  it("fails the start with the thread's own reason, and leaves the data directory free", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-pipe-'));
    dirs.push(dataDir);
    const config = loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'silent' });
    await (await startEmbeddedRuntime(config)).close();
    // A checkpoint past the log's end: write-admission (in the thread) refuses a store of another log.
    const stores = await openStores(dataDir, config.partitions, systemClock);
    await stores.state.admission.saveCheckpoint(0, 1_000_000);
    await stores.close();
    const logs = new LogSink();
    await expect(startEmbeddedRuntime(config, { logDestination: logs })).rejects.toThrow(/belongs to another log/);
    const again = await startEmbeddedRuntime(config, { logDestination: logs }).catch((err: unknown) => err);
    expect(String(again)).toMatch(/belongs to another log/);
  }, STARTUP_MS);
});
