import { randomBytes } from 'node:crypto';
import { call, issueToken, type HttpTarget } from './administration.ts';
import { RESOURCE, contentOf, tenantOf } from './corpus.ts';
import type { BenchOptions } from './options.ts';
import { queriesFor, warmupQueriesFor } from './raw-search.ts';
import { costPerWrite, sampleCpu, type CpuCost } from './cpu.ts';
import { lanes, perSecond, progress, summarize, type Summary } from './stats.ts';

/** Sizes of the write load: `writes` one at a time, then `throughputWrites` by `concurrency` writers. */
export type WriteLoad = Pick<BenchOptions, 'writes' | 'throughputWrites' | 'concurrency'>;

export interface WriteLoadResult {
  /** One write at a time; the API answers after read-your-writes (projector and index-builder). */
  sequential: Summary;
  throughput: {
    writes: number; concurrency: number; admitted: number; failed: number; wallMs: number; perSecond: number; latency: Summary;
    /** CPU ms per admitted write of each process measured (services and engines), from /proc, where the run names its processes. */
    cpu?: CpuCost[];
  };
}

/** The raw samples of a write load: runs of the same load are pooled before taking percentiles. */
export interface WriteSamples {
  concurrency: number;
  sequentialMs: number[];
  /** Latency of each admitted write of the concurrent phase. */
  concurrentMs: number[];
  failed: number;
  /** Wall time of the concurrent phase. */
  wallMs: number;
  /** CPU per admitted write of the concurrent phase, per process (measureWrites' `processes`). */
  cpu?: CpuCost[];
}

export function summarizeWrites(s: WriteSamples): WriteLoadResult {
  const admitted = s.concurrentMs.length;
  return {
    sequential: summarize(s.sequentialMs),
    throughput: {
      writes: admitted + s.failed, concurrency: s.concurrency, admitted, failed: s.failed,
      wallMs: s.wallMs, perSecond: perSecond(admitted, s.wallMs), latency: summarize(s.concurrentMs),
      ...(s.cpu === undefined ? {} : { cpu: s.cpu }),
    },
  };
}

/** One load made of several runs: admitted writes per second is then total admitted ÷ total wall time. */
export const poolWrites = (runs: readonly WriteSamples[]): WriteSamples => ({
  concurrency: runs[0]?.concurrency ?? 0,
  sequentialMs: runs.flatMap((r) => r.sequentialMs),
  concurrentMs: runs.flatMap((r) => r.concurrentMs),
  failed: runs.reduce((n, r) => n + r.failed, 0),
  wallMs: runs.reduce((n, r) => n + r.wallMs, 0),
});

export interface WritePathResult extends WriteLoadResult {
  /** From sending a write with a unique word to the first search response that contains it. */
  searchable: Summary;
  /** The acknowledgement latency of those same writes. */
  searchableAck: Summary;
  searchablePolls: number;
}

export interface SearchStepResult {
  records: number;
  /** The search mode asked for: `lexical`, or `hybrid` where the runtime keeps vectors. */
  mode: 'lexical' | 'hybrid';
  query: Summary;
  /** Mean items per packet: shows the seeded records are really retrieved. */
  itemsMean: number;
}

export const WRITES_TENANT = 'bench-writes';

export const writeBody = (content: string, subjectId: string, id?: string) => ({
  ...(id === undefined ? {} : { id }), subjectId, resource: { ...RESOURCE }, kind: 'fact', trust: 'trusted', content,
  provenance: [{ source: 'user', observedAt: new Date().toISOString() }],
});

export async function write(target: HttpTarget, token: string, body: unknown): Promise<number> {
  const res = await call(`${target.url}/v1/memories`, token, body);
  if (res.status !== 201) throw new Error(`write answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.status;
}

async function searchIds(target: HttpTarget, token: string, query: string, mode?: SearchStepResult['mode']): Promise<string[]> {
  const res = await call(`${target.url}/v1/search`, token, { query, limit: 10, ...(mode === undefined ? {} : { mode }) }, true);
  if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(res.body)}`);
  const items = (res.body as { items?: Array<{ recordId: string }> } | null)?.items ?? [];
  return items.map((i) => i.recordId);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Bodies of a write load: contents from the bench vocabulary; subjects spread the writes over the partitions. */
function writeBodies(): () => ReturnType<typeof writeBody> {
  let n = 0;
  return () => {
    n += 1;
    return writeBody(contentOf(1_000_000 + n), `ws-${n % 64}`);
  };
}

/** Ten warm-up writes, then `writes` one at a time: each one's latency, and the wall time of them all. */
export async function sequentialWrites(
  target: HttpTarget, token: string, writes: number, label: string, next = writeBodies(),
): Promise<{ ms: number[]; wallMs: number }> {
  for (let i = 0; i < 10; i += 1) await write(target, token, next());
  const ms: number[] = [];
  const started = performance.now();
  for (let i = 0; i < writes; i += 1) {
    const t0 = performance.now();
    await write(target, token, next());
    ms.push(performance.now() - t0);
    if ((i + 1) % 100 === 0) progress(`${label}: sequential writes ${i + 1}/${writes}`);
  }
  return { ms, wallMs: performance.now() - started };
}

/** The processes whose CPU a load is charged (a deployment's services and engines), by name and pid. */
export type MeasuredProcesses = ReadonlyArray<{ name: string; pid: number }>;

/** The write load on `token`'s tenant: sequential latency, then admitted throughput of concurrent writers (their CPU per write, given `processes`). */
export async function measureWrites(target: HttpTarget, token: string, load: WriteLoad, label: string, processes?: MeasuredProcesses): Promise<WriteSamples> {
  const next = writeBodies();
  const sequential = (await sequentialWrites(target, token, load.writes, label, next)).ms;

  const latency: number[] = [];
  let failed = 0;
  const cpu = processes === undefined ? undefined : sampleCpu(processes);
  const started = performance.now();
  await lanes(load.throughputWrites, load.concurrency, async () => {
    const t0 = performance.now();
    try {
      await write(target, token, next());
      latency.push(performance.now() - t0);
    } catch {
      failed += 1;
    }
    const done = latency.length + failed;
    if (done % 100 === 0) progress(`${label}: concurrent writes ${done}/${load.throughputWrites}`);
  });
  const wall = performance.now() - started;
  const cost = cpu === undefined ? undefined : costPerWrite(cpu.stop(), wall, latency.length);
  progress(`${label}: ${load.throughputWrites} writes by ${load.concurrency} writers in ${(wall / 1000).toFixed(1)} s`);
  return { concurrency: load.concurrency, sequentialMs: sequential, concurrentMs: latency, failed, wallMs: wall, ...(cost === undefined ? {} : { cpu: cost }) };
}

export async function measureWritePath(target: HttpTarget, options: BenchOptions, label: string, processes?: MeasuredProcesses): Promise<WritePathResult> {
  const token = await issueToken(target, WRITES_TENANT);
  const writes = summarizeWrites(await measureWrites(target, token, options, label, processes));

  // Write→searchable: the poller starts with the write, one search in flight at a time. Each
  // poll adds a distinct non-matching word, so the retrieval cache never answers for the index.
  const run = randomBytes(4).toString('hex');
  const searchable: number[] = [];
  const acks: number[] = [];
  let polls = 0;
  for (let i = 0; i < options.visibilityProbes; i += 1) {
    const word = `vis${run}x${i}`;
    const id = `vis-${run}-${i}`;
    const t0 = performance.now();
    const written = write(target, token, writeBody(`${contentOf(2_000_000 + i)} ${word}`, `ws-${i % 64}`, id)).then(() => acks.push(performance.now() - t0));
    for (let k = 0; ; k += 1) {
      polls += 1;
      if ((await searchIds(target, token, `${word} poll${k}x`)).includes(id)) {
        searchable.push(performance.now() - t0);
        break;
      }
      if (performance.now() - t0 > 30_000) throw new Error(`${label}: write ${id} not searchable after 30 s`);
      await sleep(1);
    }
    await written;
  }
  progress(`${label}: ${options.visibilityProbes} write→searchable probes`);
  return { ...writes, searchable: summarize(searchable), searchableAck: summarize(acks), searchablePolls: polls };
}

/** Distinct queries over every tenant of the dataset, one at a time, after a short warm-up. */
export async function measureSearch(
  target: HttpTarget, records: number, options: BenchOptions, label: string, mode: SearchStepResult['mode'] = 'lexical',
): Promise<SearchStepResult> {
  const tokens: string[] = [];
  for (let t = 0; t < options.tenants; t += 1) tokens.push(await issueToken(target, tenantOf(t, options.tenants)));
  const tokenOf = (j: number) => tokens[j % tokens.length] ?? '';
  for (const [j, q] of warmupQueriesFor(records).entries()) await searchIds(target, tokenOf(j), q, mode);
  const ms: number[] = [];
  let items = 0;
  for (const [j, q] of queriesFor(records, options.searches).entries()) {
    const started = performance.now();
    items += (await searchIds(target, tokenOf(j), q, mode)).length;
    ms.push(performance.now() - started);
    if (ms.length % 200 === 0) progress(`${label}: ${mode} searches ${ms.length}/${options.searches} at ${records} records`);
  }
  const query = summarize(ms);
  progress(`${label}: ${ms.length} ${mode} searches at ${records} records (p50 ${query.p50.toFixed(2)} ms)`);
  return { records, mode, query, itemsMean: items / Math.max(1, ms.length) };
}
