import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { eventually, memory } from '../e2e/harness.ts';
import { forgettingSuite, SETTLE_MS } from '../e2e/suites/forgetting.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Stops or starts this checkout's local Elasticsearch (infra/local), as the stack spec's outage does. */
const elasticsearch = (action: 'stop' | 'start') =>
  new Promise<void>((resolve, reject) => {
    const child = spawn('bash', ['infra/local/engines.sh', action, 'elasticsearch'], { cwd: ROOT, stdio: 'ignore' });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`engines.sh ${action} elasticsearch exited ${code}: the outage specs stop and start this checkout's local engines (infra/local), not engines named by env URLs elsewhere`))));
  });

/**
 * The embedded runtime's forgetting attacks on the seven processes and real engines, plus what
 * only a distributed runtime can suffer: its orchestrator killed mid-job, its index engine down.
 */
// An engine restart on a loaded machine can take longer than the default 60 s deadline.
forgettingSuite(() => startDistributedTestRuntime({ MEMORY_DELETION_DEADLINE: '300s' }), (context) => {
  it('resumes a job whose deletion-orchestrator is killed with SIGKILL right after the 202, and verifies it', async () => {
    const { rt, writer, settled, expectVerifiedByReplays } = context();
    for (const id of ['kill-1', 'kill-2']) {
      const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id, subjectId: 'cust-killdeer', content: `Killdeer Mining ${id} royalty is 12 percent` }) });
      expect(res.status).toBe(201);
    }
    const forget = await rt.api('POST', '/v1/subjects/cust-killdeer/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    await rt.stack.kill('deletion-orchestrator', 'SIGKILL');
    // Denied from the 202 on, with no orchestrator running.
    const search = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'Killdeer Mining royalty' } });
    expect(search.body.items).toEqual([]);
    await rt.stack.start('deletion-orchestrator');
    const job = await settled(forget.body.jobId);
    expect(job.recordIds).toEqual(['kill-1', 'kill-2']);
    expectVerifiedByReplays(job, 2);
    for (const id of ['kill-1', 'kill-2']) {
      expect(await rt.index.get('acme', id)).toBeNull();
      expect(await rt.state.contents.get('acme', id)).toBeNull();
    }
  }, 240_000);

  it('keeps a job unverified while Elasticsearch is down, and verifies it once the copy is really gone', async () => {
    const { rt, writer, settled, expectVerifiedByReplays } = context();
    const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'esdown-1', subjectId: 'cust-stilt', content: 'Stilt Robotics bonus pool is 48000' }) });
    expect(res.status).toBe(201);
    expect(await rt.index.get('acme', 'esdown-1')).not.toBeNull();
    let jobId: string | undefined;
    await elasticsearch('stop');
    try {
      const del = await rt.api('DELETE', '/v1/memories/esdown-1', { token: writer });
      expect(del.status).toBe(202);
      jobId = del.body.jobId;
      // The index copy cannot be removed or probed: the job waits, it never claims success.
      const waiting = await eventually('the job waiting on the index', async () => {
        const job = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: writer });
        return job.body.status === 'invalidating' || job.body.status === 'verifying' ? job.body : undefined;
      }, SETTLE_MS);
      await rt.advance(3_000);
      const still = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: writer });
      expect(still.body.status).not.toBe('verified');
      expect(still.body.status).not.toBe('failed');
      expect(waiting.status).not.toBe('verified');
    } finally {
      await elasticsearch('start');
    }
    const job = await settled(jobId, 240_000);
    expectVerifiedByReplays(job, 1);
    expect(await rt.index.get('acme', 'esdown-1')).toBeNull();
  }, 420_000);
});
