import { mkdirSync, writeFileSync } from 'node:fs';
import { formatIdle } from './idle.ts';
import path from 'node:path';
import type { EncryptionResult } from './encryption.ts';
import type { ErasureResult } from './erasure.ts';
import type { PlacementResult } from './placement.ts';
import type { BenchOptions } from './options.ts';
import type { CpuCost } from './cpu.ts';
import type { RawKafkaResult } from './raw-kafka.ts';
import type { RawRoundTrips } from './raw-roundtrips.ts';
import type { RawSearchResult } from './raw-search.ts';
import type { WriteLoadResult } from './http-probe.ts';
import type { RuntimeResult } from './runtimes.ts';
import { percentile, type Summary } from './stats.ts';

export interface Ratio {
  name: string;
  ours: number;
  raw: number;
  /** ours / raw: above 1 means ours takes longer (latency) or, for rates, does more per second. */
  ratio: number;
  unit: string;
  definition: string;
}

export interface BenchResult {
  at: string;
  wallMs: number;
  node: string;
  host: { platform: string; cpus: number; memoryGb: number };
  namespace: string;
  options: BenchOptions;
  /** Absent with --encryption-only, which measures no engine. */
  raw?: { kafka?: RawKafkaResult; roundTrips: RawRoundTrips; search: RawSearchResult };
  embedded?: RuntimeResult;
  distributed?: RuntimeResult;
  encryption?: EncryptionResult;
  /** The embedded pipeline in its own thread against inline (MEMORY_PIPELINE). */
  placement?: PlacementResult;
  /** The embedded runtime with RuntimeOptions.secureErasure false, then true. */
  erasure?: ErasureResult;
  ratios: Ratio[];
  cleanup: string[];
}

const ratio = (name: string, ours: number, raw: number, unit: string, definition: string): Ratio => ({
  name, ours, raw, ratio: raw > 0 ? ours / raw : Number.NaN, unit, definition,
});

export function computeRatios(r: Pick<BenchResult, 'raw' | 'embedded' | 'distributed'>): Ratio[] {
  const out: Ratio[] = [];
  if (r.raw === undefined) return out;
  const { kafka, roundTrips, search } = r.raw;
  const d = r.distributed;
  if (d && kafka) {
    const floor = 2 * kafka.produceToConsume.p50 + roundTrips.esIndexRefresh.p50;
    const floorText = '2 × kafkajs produce→consume p50 + ES index-one-doc+refresh p50 (the command hop, the event hop, the index write a write waits for)';
    out.push(ratio('distributed write p50', d.write.sequential.p50, floor, 'ms', `sequential write p50 ÷ (${floorText})`));
    out.push(ratio('distributed write→searchable p50', d.write.searchable.p50, floor, 'ms', `write→searchable p50 ÷ the same floor`));
    out.push(ratio('distributed admitted throughput', d.write.throughput.perSecond, kafka.produceThroughput, '/s',
      'writes/s admitted by concurrent writers ÷ kafkajs produce records/s (batches of 500)'));
    out.push(ratio('distributed admitted throughput (serial)', d.write.throughput.perSecond, 1000 / floor, '/s',
      'writes/s admitted by concurrent writers ÷ 1000 / that floor (one write at a time through the raw hops)'));
    const esBulk = search.elasticsearch[0]?.loadPerSecond ?? Number.NaN;
    out.push(ratio('distributed batch ingest', d.ingest.batch.perSecond, kafka.produceThroughput, '/s',
      'items/s admitted by POST /v1/memories:batch (4 clients × 500) ÷ kafkajs produce records/s (batches of 500)'));
    out.push(ratio('distributed batch ingest ÷ ES _bulk', d.ingest.batch.perSecond, esBulk, '/s', 'the same ÷ ES _bulk documents/s of the same documents (bulks of 1000)'));
    out.push(ratio('distributed async writes (folded)', d.ingest.async.foldedPerSecond, kafka.produceThroughput, '/s',
      'async writes/s by 64 clients, counted once folded ÷ kafkajs produce records/s'));
    if (d.ingest.kafka) {
      out.push(ratio('distributed memory.ingest', d.ingest.kafka.admittedPerSecond, kafka.produceThroughput, '/s',
        'accepted results/s of requests produced to memory.ingest (4 kafkajs producers × 500) ÷ kafkajs produce records/s'));
      out.push(ratio('distributed memory.ingest ÷ kafkajs consume', d.ingest.kafka.admittedPerSecond, kafka.consumeThroughput, '/s', 'the same ÷ kafkajs consume records/s of a fresh group'));
      out.push(ratio('distributed memory.ingest ÷ ES _bulk', d.ingest.kafka.admittedPerSecond, esBulk, '/s', 'the same ÷ ES _bulk documents/s of the same documents'));
    }
    for (const step of d.search.filter((s) => s.mode === 'lexical')) {
      const es = search.elasticsearch.find((s) => s.records === step.records);
      if (!es) continue;
      out.push(ratio(`distributed search p50 @${step.records}`, step.query.p50, es.query.p50, 'ms', 'HTTP search p50 ÷ the same bool query sent to ES directly, p50, same documents'));
      out.push(ratio(`distributed search p95 @${step.records}`, step.query.p95, es.query.p95, 'ms', 'HTTP search p95 ÷ the same ES query p95'));
      const hybrid = d.search.find((s) => s.mode === 'hybrid' && s.records === step.records);
      if (hybrid) {
        out.push(ratio(`distributed hybrid ÷ lexical p95 @${step.records}`, hybrid.query.p95, step.query.p95, 'ms',
          'hybrid search p95 (query embedded, ES kNN and BM25, fused) ÷ lexical search p95 over HTTP, same records and run (design §6.7 asks ≤ 2)'));
      }
    }
  }
  const e = r.embedded;
  if (e) {
    const floor = roundTrips.sqliteInsertSelect.p50;
    out.push(ratio('embedded write p50', e.write.sequential.p50, floor, 'ms', 'sequential write p50 ÷ one durable SQLite insert+select p50 (WAL, synchronous=FULL)'));
    out.push(ratio('embedded write→searchable p50', e.write.searchable.p50, floor, 'ms', 'write→searchable p50 ÷ the same SQLite round trip'));
    out.push(ratio('embedded admitted throughput', e.write.throughput.perSecond, 1000 / Math.max(roundTrips.sqliteInsertSelect.mean, 1e-9), '/s',
      'writes/s admitted by concurrent writers ÷ durable SQLite insert+select per second (1000 / mean)'));
    out.push(ratio('embedded batch ingest', e.ingest.batch.perSecond, roundTrips.sqliteBatchedInsertPerSecond, '/s',
      'items/s admitted by POST /v1/memories:batch (4 clients × 500) ÷ SQLite rows/s inserted 500 per durable transaction'));
    out.push(ratio('embedded async writes (folded)', e.ingest.async.foldedPerSecond, roundTrips.sqliteBatchedInsertPerSecond, '/s',
      'async writes/s by 64 clients, counted once folded ÷ the same SQLite batched insert'));
    for (const step of e.search.filter((s) => s.mode === 'lexical')) {
      const fts = search.sqliteFts.find((s) => s.records === step.records);
      if (!fts) continue;
      out.push(ratio(`embedded search p50 @${step.records}`, step.query.p50, fts.query.p50, 'ms', 'HTTP search p50 ÷ the same FTS5 MATCH+filters query in better-sqlite3, p50, same documents'));
      out.push(ratio(`embedded search p95 @${step.records}`, step.query.p95, fts.query.p95, 'ms', 'HTTP search p95 ÷ the same FTS5 query p95'));
      const hybrid = e.search.find((s) => s.mode === 'hybrid' && s.records === step.records);
      if (hybrid) {
        out.push(ratio(`embedded hybrid ÷ lexical p95 @${step.records}`, hybrid.query.p95, step.query.p95, 'ms',
          'hybrid search p95 (query embedded, kNN and BM25, fused) ÷ lexical search p95 over HTTP, same records and run (design §6.7 asks ≤ 2)'));
      }
    }
  }
  return out;
}

const num = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
/** Ratios far below 1 (throughput against a raw batch producer) keep two significant digits. */
const times = (x: number) => (!Number.isFinite(x) ? 'n/a' : x >= 10 ? `${x.toFixed(0)}×` : x >= 0.1 ? `${x.toFixed(2)}×` : `${x.toPrecision(2)}×`);
const W = 58;

function row(label: string, s: Summary | undefined, note = ''): string {
  // Rates have no distribution: their value goes in the notes column.
  const cells = s ? [String(s.n).padStart(6), num(s.p50).padStart(9), num(s.p95).padStart(9), num(s.p99).padStart(9)] : [' '.repeat(6), ...Array<string>(3).fill(' '.repeat(9))];
  return `${label.padEnd(W)} ${cells.join(' ')}  ${note}`.trimEnd();
}

function runtimeRows(name: string, r: RuntimeResult, tenants: number): string[] {
  const t = r.write.throughput;
  return [
    `${name} — over HTTP, started in ${(r.startMs / 1000).toFixed(1)} s`,
    ...(r.idle === undefined ? [] : [`  ${formatIdle(r.idle)}`]),
    row('  write, sequential (ack after read-your-writes)', r.write.sequential),
    row(`  write, ${t.concurrency} concurrent writers`, t.latency, `${num(t.perSecond, 1)} writes/s admitted, ${t.failed} failed`),
    ...cpuRows(`    CPU ms per admitted write of those ${t.concurrency} writers (/proc)`, t.cpu),
    row('  write→searchable (send → first search returning it)', r.write.searchable,
      `ack of the same writes p50 ${num(r.write.searchableAck.p50)}; ${r.write.searchablePolls} searches in all`),
    row('  revoke a capability (202 after the policy projector)', r.revocation.revoke),
    row('  revocation convergence (202 → next read, denied)', r.revocation.convergence, 'every read after the 202 was denied'),
    row('  delete a memory (until the 202)', r.deletion.accepted),
    row('  delete → signed receipt (verified) fetchable', r.deletion.receipt, 'tombstone, every target, replay probes, erasure from every copy\'s files, signature'),
    ...deletionHopRows(r.deletion.hops),
    ...r.search.map((s) => row(`  ${s.mode} search @${s.records} records / ${tenants} tenants (seeded*)`, s.query,
      `${num(s.itemsMean, 1)} items/packet; seeded in ${num(s.seedMs / 1000, 1)} s`)),
    ...ingestRows(r.ingest),
  ];
}

/** The steps of the jobs after their fan-out (its tasks all go at 0 ms, so they are left out). */
function deletionHopRows(hops: RuntimeResult['deletion']['hops']): string[] {
  const after = (hops ?? []).filter((h) => h.fromFirstTask.max > 0);
  if (after.length === 0) return [];
  return [
    `    where its time went: each step in ms after the job's first task (the log's timestamps; deletion-hops.ts)`,
    ...after.map((h) => row(`      ${h.step}`, h.fromFirstTask)),
  ];
}

function ingestRows({ batch: b, async: a, kafka: k }: RuntimeResult['ingest']): string[] {
  const kafkaRows = k === undefined ? [] : [
    row(`  memory.ingest, ${k.producers} kafkajs producers × ${k.requestsPerSend}, ${k.seconds} s (send → its results)`, k.sendToResults,
      `${num(k.admittedPerSecond, 0)} admitted writes/s (${k.accepted} of ${k.produced}), ${k.rejected} rejected`),
    row('    write→searchable meanwhile (an ingest request, search)', k.visible),
    ...cpuRows('    CPU ms per accepted memory.ingest request (/proc)', k.cpu),
    ...(k.ceiling === undefined ? [] : [
      `    engine-bound ceiling: ${k.ceiling.cores} cores ÷ ${num(k.ceiling.enginesMsPerWrite)} engine CPU ms per write = ${num(k.ceiling.writesPerSecond, 0)} writes/s; `
        + `memory.ingest reached ${num(k.ceiling.ratio)}× of it`,
    ]),
  ];
  return [
    row(`  batch writes, ${b.clients} clients × ${b.itemsPerBatch} items, ${b.seconds} s (per batch)`, b.batchLatency,
      `${num(b.perSecond, 0)} items/s admitted (${b.admitted} in ${b.batches} batches), ${b.failed} failed`),
    row('    write→searchable meanwhile (a single write, token search)', b.visible),
    row(`  async writes, ${a.clients} clients, ${a.seconds} s (until the 202)`, a.ackLatency,
      `${num(a.acknowledgedPerSecond, 0)}/s acknowledged, ${num(a.foldedPerSecond, 0)}/s folded; ${a.deferred} told to wait (backlog); ${a.sampledAccepted}/${a.sampled} sampled accepted, ${a.failed} failed`),
    row('    write→searchable meanwhile (an async write, token search)', a.visible),
    ...kafkaRows,
  ];
}

/** One line of CPU ms per write by process, busiest first, and their sum (the machine's cost of a write). */
function cpuRows(label: string, costs: readonly CpuCost[] | undefined): string[] {
  if (costs === undefined || costs.length === 0) return [];
  const total = costs.reduce((sum, c) => sum + (c.msPerWrite || 0), 0);
  return [`${label}: ${num(total)} in all — ${costs.map((c) => `${c.name} ${num(c.msPerWrite)}`).join(', ')}`];
}

const signed = (x: number, digits = 2) => `${x >= 0 ? '+' : ''}${num(x, digits)}`;
/** `PS SP …`: P a plaintext-log run, S a sealed-log run, a space between rounds. */
const order = (runs: EncryptionResult['writePath']['runs']) =>
  runs.map((x, i) => `${i > 0 && x.round !== runs[i - 1]?.round ? ' ' : ''}${x.log === 'plaintext' ? 'P' : 'S'}`).join('');

function encryptionRows(e: EncryptionResult, cpus: number): string[] {
  const w = e.writePath;
  const { plaintext: p, sealed: s } = w;
  const rates = (t: WriteLoadResult['throughput']) => `${num(t.perSecond, 1)} writes/s admitted, ${t.failed} failed`;
  const c = e.crypto;
  return [
    `encryption on the write path — embedded over HTTP, same load on fresh data dirs, run order ${order(w.runs)}`,
    `  (1-min load average ${num(w.loadAverage.before, 1)} before, ${num(w.loadAverage.after, 1)} after, on ${cpus} cpus: above that the A/B measures the neighbours too)`,
    row('  write, sequential — plaintext log (baseline)', p.sequential),
    row('  write, sequential — sealed log', s.sequential, `p50 ${signed(w.sequentialP50OverheadMs)} ms, p95 ${signed(w.sequentialP95OverheadMs)} ms`),
    row(`  write, ${w.load.concurrency} concurrent writers — plaintext log`, p.throughput.latency, rates(p.throughput)),
    row(`  write, ${w.load.concurrency} concurrent writers — sealed log`, s.throughput.latency, `${rates(s.throughput)}; p50 ${signed(w.concurrentP50OverheadMs)} ms`),
    `  throughput loss from sealing: ${num(w.throughputLossPct, 1)}% of admitted writes/s, pooled; per round (median ${num(percentile(w.throughputLossPctByRound, 50), 1)}%): ` +
      w.throughputLossPctByRound.map((x) => `${num(x, 1)}%`).join(', '),
    '',
    `${`crypto operations alone (ContentCodec, ${c.contentBytes}-byte content), µs per call`.padEnd(W)} ${'n'.padStart(6)} ${'p50'.padStart(9)} ${'p95'.padStart(9)} ${'p99'.padStart(9)}`,
    ...c.ops.map((op) => row(`  ${op.name}`, op.us, `mean ${num(op.us.mean, 1)}`)),
    `  key store: ${c.keyStore}`,
  ];
}

function placementRows(p: PlacementResult): string[] {
  const rates = (t: WriteLoadResult['throughput']) => `${num(t.perSecond, 1)} writes/s admitted, ${t.failed} failed`;
  return [
    `pipeline placement — embedded over HTTP, same load on fresh data dirs, run order ${p.order} (T thread, I inline)`,
    row('  write, sequential — pipeline thread (default)', p.thread.sequential),
    row('  write, sequential — inline (MEMORY_PIPELINE=inline)', p.inline.sequential, `p50 ${signed(p.inline.sequential.p50 - p.thread.sequential.p50)} ms`),
    row(`  write, ${p.load.concurrency} concurrent writers — pipeline thread`, p.thread.throughput.latency, rates(p.thread.throughput)),
    row(`  write, ${p.load.concurrency} concurrent writers — inline`, p.inline.throughput.latency, rates(p.inline.throughput)),
  ];
}

/**
 * Off, on and on ÷ off side by side, and beside them the raw SQLite figure of the same
 * operation (same run): insert+select per second for a write, a one-row delete without and
 * with secure_delete plus a TRUNCATE checkpoint for a deletion.
 */
function erasureRows(e: ErasureResult, raw: NonNullable<BenchResult['raw']>['roundTrips'] | undefined): string[] {
  const cells = (label: string, off: number, on: number, ratio: number, rawNote: string) =>
    `${label.padEnd(W)} ${num(off).padStart(10)} ${num(on).padStart(10)} ${times(ratio).padStart(9)}  ${rawNote}`.trimEnd();
  const rawWrites = raw ? `raw SQLite insert+select ${num(1000 / Math.max(raw.sqliteInsertSelect.mean, 1e-9), 0)}/s (1000 / mean)` : '';
  const rawDelete = (p: 'p50' | 'p95') => (raw ? `raw SQLite delete 1 row ${p} ${num(raw.sqliteDelete[p])} / ${num(raw.sqliteSecureDelete[p])} ms (secure_delete + TRUNCATE checkpoint)` : '');
  return [
    `secure erasure — embedded over HTTP, RuntimeOptions.secureErasure false then true, fresh data dirs, ${e.load.writes} writes and ${e.load.deletions} deletions each`,
    `  (1-min load average ${num(e.loadAverage.before, 1)} before, ${num(e.loadAverage.after, 1)} after)`,
    `${''.padEnd(W)} ${'off'.padStart(10)} ${'on'.padStart(10)} ${'on÷off'.padStart(9)}  raw engine, same run (off / on)`,
    cells('  sequential writes/s (ack after read-your-writes)', e.off.writesPerSecond, e.on.writesPerSecond, e.ratio.writesPerSecond, rawWrites),
    cells('  write, sequential p50 (ms)', e.off.write.p50, e.on.write.p50, e.on.write.p50 / e.off.write.p50, ''),
    cells('  delete → verified receipt p50 (ms)', e.off.deletion.receipt.p50, e.on.deletion.receipt.p50, e.ratio.receiptP50, rawDelete('p50')),
    cells('  delete → verified receipt p95 (ms)', e.off.deletion.receipt.p95, e.on.deletion.receipt.p95, e.ratio.receiptP95, rawDelete('p95')),
  ];
}

function rawRows({ kafka, roundTrips: rt, search }: NonNullable<BenchResult['raw']>): string[] {
  const lines = ['raw engines, same run, same record size, same documents and queries'];
  if (kafka) {
    lines.push(
      row(`  kafkajs produce 1 record (${kafka.recordBytes} B, acks=all)`, kafka.produce),
      row('  kafkajs produce → consumer eachMessage, 1 record', kafka.produceToConsume),
      row(`  kafkajs produce throughput (${kafka.records} records)`, undefined, `${num(kafka.produceThroughput, 0)} records/s`),
      row(`  kafkajs consume throughput (${kafka.records} records)`, undefined, `${num(kafka.consumeThroughput, 0)} records/s`),
      row('  Kafka broker CPU per record (/proc)', undefined,
        `${num(kafka.brokerCpuMs.perSingleRecord)} ms sent alone (acks=all), ${num(kafka.brokerCpuMs.perBatchedRecord, 3)} ms in sends of 500`),
    );
  }
  lines.push(row('  ES index 1 document, refresh=true', rt.esIndexRefresh, `Elasticsearch CPU ${num(rt.esIndexRefreshCpuMs)} ms per document (/proc)`));
  for (const s of search.elasticsearch) lines.push(row(`  ES bool query @${s.records} (bulk ${num(s.loadPerSecond, 0)} docs/s)`, s.query));
  lines.push(
    row('  Redis SET', rt.redisSet), row('  Redis GET', rt.redisGet), row('  SQLite insert+select (WAL, synchronous=FULL)', rt.sqliteInsertSelect),
    row('  SQLite insert, 500 rows per transaction (synchronous=FULL)', undefined, `${num(rt.sqliteBatchedInsertPerSecond, 0)} rows/s`),
    row('  SQLite delete 1 row (secure_delete off)', rt.sqliteDelete),
    row('  SQLite delete 1 row, secure_delete + TRUNCATE checkpoint', rt.sqliteSecureDelete),
  );
  for (const s of search.sqliteFts) lines.push(row(`  SQLite FTS5 query @${s.records} (load ${num(s.loadPerSecond, 0)} docs/s)`, s.query));
  return lines;
}

export function formatTable(r: BenchResult): string {
  const lines: string[] = [
    `governed-memory bench — ${r.at} — node ${r.node}, ${r.host.cpus} cpus, ${r.host.memoryGb} GB — wall ${num(r.wallMs / 1000, 1)} s`,
    `${'latencies in ms'.padEnd(W)} ${'n'.padStart(6)} ${'p50'.padStart(9)} ${'p95'.padStart(9)} ${'p99'.padStart(9)}  notes`,
  ];
  if (r.embedded) lines.push('', ...runtimeRows('embedded runtime (SQLite, one process)', r.embedded, r.options.tenants));
  if (r.distributed) lines.push('', ...runtimeRows('distributed runtime (Kafka, Elasticsearch, Redis; 9 processes)', r.distributed, r.options.tenants));
  if (r.encryption) lines.push('', ...encryptionRows(r.encryption, r.host.cpus));
  if (r.placement) lines.push('', ...placementRows(r.placement));
  if (r.erasure) lines.push('', ...erasureRows(r.erasure, r.raw?.roundTrips));
  if (r.raw) lines.push('', ...rawRows(r.raw));
  if (r.ratios.length > 0) {
    lines.push('', `${'ratios ours/raw'.padEnd(44)} ${'ours'.padStart(10)} ${'raw'.padStart(10)} ${'ratio'.padStart(9)}`);
    for (const x of r.ratios) {
      lines.push(`  ${x.name.padEnd(42)} ${num(x.ours).padStart(10)} ${num(x.raw).padStart(10)} ${times(x.ratio).padStart(9)}  ${x.unit}`);
    }
    // Each definition once: the p95 rows of a size share theirs with the p50 row.
    lines.push('', 'ratio definitions:');
    const defined = new Set<string>();
    for (const x of r.ratios) {
      if (defined.has(x.definition)) continue;
      defined.add(x.definition);
      lines.push(`  ${x.name}: ${x.definition}`);
    }
  }
  if (r.embedded || r.distributed) {
    lines.push(
      '',
      '* the search datasets are seeded below the API through the runtime\'s own store ports (record hash, content, index',
      '  document, as the projector and index-builder fold MemoryWritten); every query is distinct, so the retrieval cache misses.',
    );
  }
  return `${lines.join('\n')}\n`;
}

export function writeResults(root: string, r: BenchResult): string {
  const dir = path.join(root, 'bench-results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `bench-${r.at.replaceAll(':', '-')}.json`);
  const json = `${JSON.stringify(r, null, 2)}\n`;
  writeFileSync(file, json);
  writeFileSync(path.join(dir, 'latest.json'), json);
  return file;
}
