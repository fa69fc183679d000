import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaBus, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, TOPICS } from '@gm/contracts';
import { eventually, memory, STARTUP_MS, type ApiBody, type ApiResponse } from '../e2e/harness.ts';
import { startDistributedTestRuntime, type DistributedTestRuntime } from './harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Two stack starts, a forget settling, three rebuilds and the reads around them. */
const SPEC_MS = 600_000;

/** The groups that fold the two logs into the projections, each with the topic it folds. */
const FOLDING_GROUPS = [
  [CONSUMER_GROUPS.projector, TOPICS.events], [CONSUMER_GROUPS.indexBuilder, TOPICS.events], [CONSUMER_GROUPS.summaryBuilder, TOPICS.events],
  [CONSUMER_GROUPS.expiryScheduler, TOPICS.events], [CONSUMER_GROUPS.policyProjector, TOPICS.policyChanges],
] as const;

type Digests = { projection: string; index: string; summaries: string };
interface RebuildJson {
  events: number;
  policyChanges: number;
  before: Digests;
  after: Digests;
  identical: boolean;
  wereEmpty: Record<keyof Digests, boolean>;
  differing: string[];
  deletionJobs: { jobs: number; restored: number; open: number; receipts: number; receiptsAsked: number };
}

/** `pnpm rebuild:distributed --json` as an operator runs it: its own process, the services' environment. */
function rebuildCommand(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'apps/distributed/src/rebuild.ts', '--json'], {
      cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * An answer as a reader compares it: without what differs between any two requests, and a
 * search's items without their scores — recency moves with the clock, and BM25's statistics
 * with the segments (a rebuilt index no longer counts the forgotten documents).
 */
function comparable(res: ApiResponse): string {
  const { requestId: _r, packetId: _p, expiresAt: _e, ...rest } = res.body;
  const items = Array.isArray(res.body.items) ? { items: res.body.items.map(({ rank: _rank, ...item }) => item) } : {};
  return JSON.stringify({ status: res.status, body: { ...rest, ...items } });
}

/**
 * The distributed runtime's projections rebuilt from the log (docs/reliability.md, "Rebuilding
 * from the log"): refused while services run; on intact projections the digests match; after
 * Redis and Elasticsearch lost the namespace's projections they come back digest for digest,
 * and the restarted stack answers as before and takes new writes.
 */
describe('rebuilding the distributed projections from the log', () => {
  let rt: DistributedTestRuntime;
  let raw: Bus;
  let writer: string;
  let admin: string;
  const maple = { kind: 'project', id: 'maple' } as const;

  beforeAll(async () => {
    // No vectors: the rebuild drops them for the vector-indexer to embed again, which says nothing here.
    rt = await startDistributedTestRuntime({ MEMORY_SEMANTIC: 'off' });
    raw = createKafkaBus({ brokers: (rt.stack.env.KAFKA_BROKERS ?? '').split(','), clientId: `rebuild-spec-${randomUUID().slice(0, 6)}`, topicPrefix: `${rt.namespace}.` });
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    admin = await rt.issue({
      agentId: 'admin-desk', principal: { id: 'carol', kind: 'person' }, scopes: [maple, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'revoke', 'search', 'read', 'cite'],
    });
  }, STARTUP_MS);
  afterAll(async () => {
    await raw.close();
    await rt.close();
  }, STARTUP_MS);

  const write = async (body: Record<string, unknown>) => {
    const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory(body) });
    expect(res.status, res.text).toBe(201);
  };
  /** What a reader sees of everything this spec wrote. */
  const observe = async (): Promise<string[]> => {
    const answers: Array<ApiResponse> = [];
    for (const id of ['rb-1', 'rb-2', 'rb-old', 'rb-new', 'rb-gone-1']) answers.push(await rt.api('GET', `/v1/memories/${id}`, { token: writer }));
    answers.push(await rt.api('GET', '/v1/memories/rb-old/history', { token: writer }));
    for (const query of ['Heron Freight invoice', 'Heron Freight contact channel', 'Plover Dental retainer']) {
      answers.push(await rt.api('POST', '/v1/search', { token: writer, body: { query } }));
    }
    // The grants as the broker decides by them (no route lists them): g-temp removed, the rest kept.
    return [...answers.map(comparable), JSON.stringify(await rt.state.policies.snapshot('acme'))];
  };
  /** Every folding group has committed the log's end: what the stack had applied when it stopped, or what the rebuild read. */
  const expectGroupsAtLogEnd = async () => {
    for (const [group, topic] of FOLDING_GROUPS) {
      const ends = await raw.endOffsets(topic);
      for (const [partition, end] of ends.entries()) {
        if (end > 0) expect(await raw.waitForCommitted(group, { topic, partition, offset: end - 1 }, 60_000), `${group} on ${topic}[${partition}]`).toBe(true);
      }
    }
  };

  it('names the variable to fix when the environment is incomplete, before touching anything', async () => {
    const { REDIS_URL: _redis, ...withoutRedis } = rt.stack.env;
    const result = await rebuildCommand({ ...withoutRedis, REDIS_URL: '' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('REDIS_URL');
  });

  it('refuses while the services run, matches intact projections, restores lost ones, and the stack serves again', async () => {
    await write({ id: 'rb-1', subjectId: 'cust-heron', content: 'Heron Freight pays every invoice by bank transfer' });
    await write({ id: 'rb-2', subjectId: 'cust-heron', kind: 'preference', content: 'Heron Freight wants a monthly statement' });
    await write({ id: 'rb-old', subjectId: 'cust-heron', kind: 'preference', content: 'Heron Freight contact channel is fax' });
    await write({ id: 'rb-new', subjectId: 'cust-heron', kind: 'preference', supersedesId: 'rb-old', content: 'Heron Freight contact channel is chat' });
    for (const id of ['rb-gone-1', 'rb-gone-2']) await write({ id, subjectId: 'cust-plover', content: `Plover Dental retainer ${id} is 900 per month` });
    const forget = await rt.api('POST', '/v1/subjects/cust-plover/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    const job = await eventually('the forget verified', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${String(forget.body.jobId)}`, { token: writer });
      return res.body.status === 'verified' || res.body.status === 'failed' ? res.body : undefined;
    }, 120_000);
    expect(job.status).toBe('verified');
    // The signed receipt follows the verification (the receipt step of the job).
    const receiptBefore = await eventually('the receipt signed', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${String(forget.body.jobId)}/receipt`, { token: writer });
      return res.status === 200 ? res.body : undefined;
    }, 60_000);
    const grant = { principal: { id: 'dave', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'] };
    const added = await rt.api('POST', '/v1/grants', { token: admin, body: grant });
    expect(added.status).toBe(201);
    expect((await rt.api('DELETE', `/v1/grants/${String(added.body.grantId)}`, { token: admin })).status).toBe(202);
    await expectGroupsAtLogEnd();
    const answersBefore = await observe();

    // Running services: refused, nothing touched.
    const refused = await rebuildCommand(rt.stack.env);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('refusing to run');
    expect(refused.stderr).toContain(CONSUMER_GROUPS.projector);

    await rt.stack.stop();
    // (a) Intact projections: the fold of the log is what the services had built.
    const intact = await rebuildCommand(rt.stack.env);
    expect(intact.code, intact.stderr).toBe(0);
    const first = JSON.parse(intact.stdout) as RebuildJson;
    expect(first).toMatchObject({ identical: true, differing: [], wereEmpty: { projection: false, index: false, summaries: false } });
    // The job store kept its job and receipt: nothing written back.
    expect(first.deletionJobs).toEqual({ jobs: 1, restored: 0, open: 0, receipts: 0, receiptsAsked: 0 });
    expect(first.events).toBeGreaterThan(0);
    expect(first.policyChanges).toBeGreaterThan(0);
    await expectGroupsAtLogEnd();

    // (b) The disaster: every Redis key and Elasticsearch index of the namespace gone.
    const keys = await rt.state.kv.keys(`gm:${rt.namespace}:`);
    expect(keys.length).toBeGreaterThan(0);
    await rt.state.kv.del(keys);
    const es = rt.stack.env.ELASTICSEARCH_URL ?? '';
    const indices = Object.keys((await (await fetch(`${es}/gm-${rt.namespace}-*?allow_no_indices=true`)).json()) as Record<string, unknown>);
    expect(indices.length).toBeGreaterThan(0);
    for (const index of indices) expect((await fetch(`${es}/${index}`, { method: 'DELETE' })).status).toBe(200);
    // And the folding groups' offsets, as Kafka expires them for groups idle longer than offsets.retention.minutes.
    for (const [group, topic] of FOLDING_GROUPS) {
      await raw.resetGroup(group);
      expect(await raw.committedOffsets(group, topic)).toEqual((await raw.endOffsets(topic)).map(() => 0));
    }
    const lost = await rebuildCommand(rt.stack.env);
    expect(lost.code, lost.stderr).toBe(0);
    const second = JSON.parse(lost.stdout) as RebuildJson;
    expect(second.wereEmpty).toEqual({ projection: true, index: true, summaries: true });
    expect(second.after).toEqual(first.after);
    expect(second.identical).toBe(false);
    expect(second.deletionJobs).toEqual({ jobs: 1, restored: 1, open: 0, receipts: 1, receiptsAsked: 0 });
    // Handed over where the fold stopped: the services neither fold the log a second time nor skip any of it.
    await expectGroupsAtLogEnd();

    // The stack again: the same answers, the forgotten subject still forgotten, and a new write.
    await rt.restart();
    expect(await observe()).toEqual(answersBefore);
    const search = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'Plover Dental retainer' } });
    expect(search.body.items).toEqual([]);
    // The forget's job and its receipt are folded back from the log: the same job, the same signed receipt.
    const jobAfter = await rt.api('GET', `/v1/deletion-jobs/${String(forget.body.jobId)}`, { token: writer });
    // (The orchestrator stamped each change with its own clock; the fold stamps it with the event's.)
    const { updatedAt: _was, ...jobWas } = job;
    const { updatedAt: _is, ...jobIs } = jobAfter.body;
    expect(jobIs).toEqual(jobWas);
    const receiptAfter = await rt.api('GET', `/v1/deletion-jobs/${String(forget.body.jobId)}/receipt`, { token: writer });
    expect(receiptAfter.status).toBe(200);
    expect(receiptAfter.body.receipt).toBe(receiptBefore.receipt);
    await write({ id: 'rb-3', subjectId: 'cust-heron', content: 'Heron Freight opened a second depot' });
    const fresh = await rt.api<ApiBody>('GET', '/v1/memories/rb-3', { token: writer });
    expect(fresh.status).toBe(200);
    expect(fresh.body.content).toBe('Heron Freight opened a second depot');
    const found = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'Heron Freight second depot' } });
    expect(found.body.items.map((i) => i.recordId)).toContain('rb-3');
  }, SPEC_MS);
});
