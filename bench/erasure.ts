/**
 * The cost of secure erasure (design §8, docs/deletion.md): the embedded runtime with
 * `RuntimeOptions.secureErasure` false, then true (the default) — SQLite secure_delete, FTS5
 * secure-delete and a TRUNCATE checkpoint after purges — each on a fresh data directory in the
 * same run. Per variant: sequential writes/s (ack after read-your-writes), then delete →
 * verified receipt, the path that pays for zeroing freed pages and emptying the WAL.
 */
import os from 'node:os';
import { issueToken } from './administration.ts';
import { tenantOf } from './corpus.ts';
import { measureDeletion, type DeletionResult } from './deletion.ts';
import { WRITES_TENANT, sequentialWrites } from './http-probe.ts';
import type { BenchOptions } from './options.ts';
import { withEmbeddedRuntime } from './runtimes.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

export interface ErasureRun {
  secureErasure: boolean;
  /** Sequential writes, one at a time, each acknowledged after read-your-writes. */
  write: Summary;
  writesPerSecond: number;
  deletion: DeletionResult;
}

export interface ErasureResult {
  load: { writes: number; deletions: number };
  /** 1-minute load average before and after: on a busy machine the A/B measures the neighbours too. */
  loadAverage: { before: number; after: number };
  /** In the order they ran: secureErasure false, then true. */
  off: ErasureRun;
  on: ErasureRun;
  /** on ÷ off: below 1 for writes/s and above 1 for latencies is what secure erasure costs. */
  ratio: { writesPerSecond: number; receiptP50: number; receiptP95: number };
}

const ratioOf = (on: number, off: number): number => (off > 0 ? on / off : Number.NaN);

async function run(secureErasure: boolean, options: BenchOptions): Promise<ErasureRun> {
  const label = `erasure ${secureErasure ? 'on' : 'off'}`;
  return withEmbeddedRuntime(label, { secureErasure }, async (_runtime, target) => {
    const writes = await sequentialWrites(target, await issueToken(target, WRITES_TENANT), options.erasureWrites, label);
    const writesPerSecond = perSecond(writes.ms.length, writes.wallMs);
    progress(`${label}: ${writesPerSecond.toFixed(0)} sequential writes/s`);
    // The deletes run on a data directory the writes above have filled: the pages they free sit among others'.
    const deletion = await measureDeletion(target, tenantOf(2, options.tenants), options.erasureDeletions, label);
    return { secureErasure, write: summarize(writes.ms), writesPerSecond, deletion };
  });
}

export async function measureErasure(options: BenchOptions): Promise<ErasureResult> {
  const before = os.loadavg()[0] ?? Number.NaN;
  const off = await run(false, options);
  const on = await run(true, options);
  return {
    load: { writes: options.erasureWrites, deletions: options.erasureDeletions },
    loadAverage: { before, after: os.loadavg()[0] ?? Number.NaN },
    off, on,
    ratio: {
      writesPerSecond: ratioOf(on.writesPerSecond, off.writesPerSecond),
      receiptP50: ratioOf(on.deletion.receipt.p50, off.deletion.receipt.p50),
      receiptP95: ratioOf(on.deletion.receipt.p95, off.deletion.receipt.p95),
    },
  };
}
