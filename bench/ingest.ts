/**
 * Ingest at platform scale (docs/ingest.md), over HTTP: batch writes (4 clients × 500 items) and
 * asynchronous single writes (64 clients), each for a fixed time, with a probe measuring
 * write→searchable by a consistency-token read while the load runs.
 *
 * - Batch: admitted = items answered 201 (a synchronous batch answers once its items were
 *   folded).
 * - Async: acknowledged = 202s. Folded = the same writes once a read with each client's last
 *   token returned (the pipeline drained them), per second from the start to that moment; a
 *   sample of the commands is asked for its outcome, which must be accepted.
 */
import { randomBytes } from 'node:crypto';
import { issueToken, type HttpTarget } from './administration.ts';
import { writeBody, type MeasuredProcesses } from './http-probe.ts';
import { measureKafkaIngest, type KafkaIngestResult } from './kafka-ingest.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

export interface BatchIngestResult {
  clients: number;
  itemsPerBatch: number;
  seconds: number;
  batches: number;
  admitted: number;
  failed: number;
  /** Failed items by "status code", e.g. "504 MEM_TIMEOUT". */
  failures: Record<string, number>;
  perSecond: number;
  /** One batch request, sent → answered. */
  batchLatency: Summary;
  /** A probe's async write → the first token search that returns it, under this load. */
  visible: Summary;
}

export interface AsyncIngestResult {
  clients: number;
  seconds: number;
  acknowledged: number;
  failed: number;
  /** 503s of the backlog bound (MEMORY_ASYNC_BACKLOG): the client waited Retry-After and sent again. */
  deferred: number;
  acknowledgedPerSecond: number;
  /** Acknowledged writes ÷ (start → every client's last token read returned). */
  foldedPerSecond: number;
  /** Commands asked for their outcome after the run, and how many were accepted. */
  sampled: number;
  sampledAccepted: number;
  ackLatency: Summary;
  visible: Summary;
}

export interface IngestResult {
  batch: BatchIngestResult;
  async: AsyncIngestResult;
  /** memory.ingest (distributed only). */
  kafka?: KafkaIngestResult;
}

const BATCH_CLIENTS = 4;
const ITEMS_PER_BATCH = 500;
const ASYNC_CLIENTS = 64;
const SUBJECTS = 200;
const OUTCOME_SAMPLE = 50;

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

async function post(url: string, token: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text.length > 0 ? JSON.parse(text) : null };
}

/**
 * Until `stop()` says so: a write of a fresh word (asynchronous: sent again after Retry-After
 * while the backlog bound refuses it), then token searches until one returns it (a 503
 * MEM_NOT_YET_CONSISTENT is asked again); the time from first sending the write.
 */
async function probeVisibility(target: HttpTarget, token: string, stop: () => boolean, label: string, respondAsync: boolean): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; !stop(); i += 1) {
    const word = `probe${randomBytes(6).toString('hex')}`;
    const started = performance.now();
    let written: Answer;
    // Keyed: a 503 MEM_TIMEOUT may have landed, and the resend must get its answer, not a 409 for
    // its own id. The same body too (its provenance time included), or the key answers 422 MEM_IDEMPOTENCY_MISMATCH.
    const headers: Record<string, string> = { 'idempotency-key': `probe-${word}`, ...(respondAsync ? { prefer: 'respond-async' } : {}) };
    const body = writeBody(`ingest visibility ${word}`, `ingest-probe-${i % 7}`, `probe-${word}`);
    for (;;) {
      written = await post(`${target.url}/v1/memories`, token, body, headers);
      // The backlog bound (a batch load keeps the pipeline behind too): wait as told; the wait counts.
      if (written.status !== 503) break;
      await new Promise((resolve) => setTimeout(resolve, 1000 * Number(written.headers.get('retry-after') ?? 1)));
    }
    if (written.status !== (respondAsync ? 202 : 201)) throw new Error(`${label}: the probe's write answered ${written.status}: ${JSON.stringify(written.body)}`);
    const consistency = written.headers.get('consistency-token') ?? '';
    for (;;) {
      const found = await post(`${target.url}/v1/search`, token, { query: word, limit: 5 }, { 'consistency-token': consistency });
      if (found.status === 200 && ((found.body as { items?: unknown[] }).items?.length ?? 0) > 0) break;
      if (found.status !== 200 && found.status !== 503) throw new Error(`${label}: the probe's search answered ${found.status}`);
    }
    samples.push(performance.now() - started);
  }
  return samples;
}

/** A load that runs for `seconds` from now: `running()` until then. */
function timedLoad(seconds: number): { started: number; running: () => boolean } {
  const started = performance.now();
  const deadline = started + seconds * 1000;
  return { started, running: () => performance.now() < deadline };
}

export async function measureBatch(target: HttpTarget, token: string, probeToken: string, seconds: number, label: string): Promise<BatchIngestResult> {
  let admitted = 0;
  let failed = 0;
  /** Failed items by status and problem code: a failure the load did not expect names itself. */
  const failures = new Map<string, number>();
  const latencies: number[] = [];
  const { started, running } = timedLoad(seconds);
  // Beside synchronous batches, a synchronous probe: async writes wait while the batches keep the pipeline behind.
  const probe = probeVisibility(target, probeToken, () => !running(), label, false);
  // Its failure is reported where it is awaited, after the load; until then it must not count as unhandled (a crash, no cleanup).
  probe.catch(() => undefined);
  await Promise.all(Array.from({ length: BATCH_CLIENTS }, async (_, client) => {
    for (let n = 0; running(); n += 1) {
      const items = Array.from({ length: ITEMS_PER_BATCH }, (_, i) =>
        writeBody(`ingest batch ${client} ${n} ${i} harbor invoice`, `ingest-s${(client * 31 + n * 7 + i) % SUBJECTS}`, `ib-${client}-${n}-${i}`));
      const sent = performance.now();
      const res = await post(`${target.url}/v1/memories:batch`, token, { items });
      if (res.status !== 200) throw new Error(`${label}: a batch answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
      latencies.push(performance.now() - sent);
      for (const item of (res.body as { items: Array<{ httpStatus: number; error?: { code?: string } }> }).items) {
        if (item.httpStatus === 201) admitted += 1;
        else {
          failed += 1;
          const code = `${item.httpStatus} ${item.error?.code ?? '?'}`;
          failures.set(code, (failures.get(code) ?? 0) + 1);
        }
      }
    }
  }));
  const wallMs = performance.now() - started;
  const visible = await probe;
  const result: BatchIngestResult = {
    clients: BATCH_CLIENTS, itemsPerBatch: ITEMS_PER_BATCH, seconds, batches: latencies.length, admitted, failed,
    failures: Object.fromEntries(failures), perSecond: perSecond(admitted, wallMs), batchLatency: summarize(latencies), visible: summarize(visible),
  };
  const why = failures.size === 0 ? '' : `: ${[...failures].map(([code, n]) => `${n} × ${code}`).join(', ')}`;
  progress(`${label}: batch ingest ${result.perSecond.toFixed(0)} admitted writes/s (${admitted} in ${latencies.length} batches, ${failed} failed${why}); write→searchable p95 ${result.visible.p95.toFixed(0)} ms`);
  return result;
}

export async function measureAsync(target: HttpTarget, token: string, probeToken: string, seconds: number, label: string): Promise<AsyncIngestResult> {
  let acknowledged = 0;
  let failed = 0;
  let deferred = 0;
  const latencies: number[] = [];
  const commandIds: string[] = [];
  const lastTokens: string[] = [];
  const { started, running } = timedLoad(seconds);
  const probe = probeVisibility(target, probeToken, () => !running(), label, true);
  probe.catch(() => undefined);
  await Promise.all(Array.from({ length: ASYNC_CLIENTS }, async (_, client) => {
    let carried: string | undefined;
    for (let n = 0; running(); n += 1) {
      const sent = performance.now();
      const res = await post(`${target.url}/v1/memories`, token, writeBody(`ingest async ${client} ${n} harbor invoice`, `ingest-a${(client + n * 13) % SUBJECTS}`, `ia-${client}-${n}`), {
        prefer: 'respond-async', ...(carried === undefined ? {} : { 'consistency-token': carried }),
      });
      if (res.status === 503) {
        // The backlog bound: a well-behaved client waits as told, then sends the same write again.
        deferred += 1;
        n -= 1;
        await new Promise((resolve) => setTimeout(resolve, 1000 * Number(res.headers.get('retry-after') ?? 1)));
        continue;
      }
      if (res.status !== 202) {
        failed += 1;
        continue;
      }
      latencies.push(performance.now() - sent);
      acknowledged += 1;
      carried = res.headers.get('consistency-token') ?? carried;
      if (commandIds.length < OUTCOME_SAMPLE && n % 7 === 0) commandIds.push(String((res.body as { commandId: string }).commandId));
    }
    if (carried !== undefined) lastTokens.push(carried);
  }));
  const ackWallMs = performance.now() - started;
  // Every client's last token covers all its writes: once each read returns, all were folded.
  await Promise.all(lastTokens.map(async (consistency) => {
    for (;;) {
      const read = await post(`${target.url}/v1/search`, token, { query: 'harbor', limit: 1 }, { 'consistency-token': consistency });
      if (read.status === 200) return;
      if (read.status !== 503) throw new Error(`${label}: a token read answered ${read.status}`);
    }
  }));
  const foldedWallMs = performance.now() - started;
  const visible = await probe;
  let sampledAccepted = 0;
  for (const commandId of commandIds) {
    const res = await fetch(`${target.url}/v1/commands/${commandId}`, { headers: { authorization: `Bearer ${token}` } });
    if (((await res.json()) as { state?: string }).state === 'accepted') sampledAccepted += 1;
  }
  const result: AsyncIngestResult = {
    clients: ASYNC_CLIENTS, seconds, acknowledged, failed, deferred,
    acknowledgedPerSecond: perSecond(acknowledged, ackWallMs), foldedPerSecond: perSecond(acknowledged, foldedWallMs),
    sampled: commandIds.length, sampledAccepted, ackLatency: summarize(latencies), visible: summarize(visible),
  };
  progress(`${label}: async ingest ${result.acknowledgedPerSecond.toFixed(0)} acknowledged/s, ${result.foldedPerSecond.toFixed(0)} folded/s; write→searchable p95 ${result.visible.p95.toFixed(0)} ms`);
  return result;
}

/** Both HTTP loads on a runtime's fresh tenant, then (given Kafka) the memory.ingest load on another; `seconds` per load. */
export async function measureIngest(
  target: HttpTarget, tenant: string, seconds: number, label: string,
  kafka?: { brokers: string[]; namespace: string; processes?: MeasuredProcesses },
): Promise<IngestResult> {
  const token = await issueToken(target, tenant, ['write', 'search', 'read']);
  const probeToken = await issueToken(target, `${tenant}-probe`, ['write', 'search', 'read']);
  const batch = await measureBatch(target, token, probeToken, seconds, label);
  const async = await measureAsync(target, token, probeToken, seconds, label);
  if (kafka === undefined) return { batch, async };
  const kafkaToken = await issueToken(target, `${tenant}-kafka`, ['write', 'search', 'read']);
  return { batch, async, kafka: await measureKafkaIngest({ http: target, ...kafka, token: kafkaToken }, seconds, label) };
}
