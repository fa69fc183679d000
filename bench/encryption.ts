import os from 'node:os';
import { measureCryptoOps, type CryptoOpsResult } from './crypto-ops.ts';
import { poolWrites, summarizeWrites, type WriteLoad, type WriteLoadResult, type WriteSamples } from './http-probe.ts';
import type { BenchOptions } from './options.ts';
import { benchEmbeddedWrites } from './runtimes.ts';
import { progress } from './stats.ts';

/** `plaintext`: RuntimeOptions.plaintextLogForBenchmark, the services use the raw log; `sealed`: the default. */
export type LogMode = 'plaintext' | 'sealed';

export interface EncryptionRun {
  round: number;
  log: LogMode;
  write: WriteLoadResult;
}

export interface EncryptionResult {
  /** The same write load on the embedded runtime over HTTP, each run on a fresh data directory. */
  writePath: {
    load: WriteLoad;
    /** 1-minute load average before and after the runs: on a busy machine the A/B is mostly noise. */
    loadAverage: { before: number; after: number };
    /** In the order they ran. */
    runs: EncryptionRun[];
    /** Each variant's runs pooled: percentiles over every sample, writes/s = admitted ÷ wall time. */
    plaintext: WriteLoadResult;
    sealed: WriteLoadResult;
    /** (plaintext − sealed) ÷ plaintext admitted writes/s of the concurrent phase, in %. */
    throughputLossPct: number;
    /** The same within each round: their spread shows how much of the figure is noise. */
    throughputLossPctByRound: number[];
    /** sealed − plaintext, ms. */
    sequentialP50OverheadMs: number;
    sequentialP95OverheadMs: number;
    concurrentP50OverheadMs: number;
  };
  crypto: CryptoOpsResult;
}

const lossPct = (plain: number, sealed: number): number => (plain > 0 ? ((plain - sealed) / plain) * 100 : Number.NaN);

/**
 * The cost of sealing the log on the write path (§8.5): an A/B of the embedded runtime, then
 * the crypto operations alone. The machine drifts (other load, page cache, thermal): many short
 * rounds alternate the order — plaintext then sealed, then sealed then plaintext — so a steady
 * drift weighs on both variants alike, and a discarded warm-up run comes first so neither
 * variant pays for the process's cold JIT.
 */
export async function measureEncryption(options: BenchOptions): Promise<EncryptionResult> {
  const load: WriteLoad = { writes: options.encryptionWrites, throughputWrites: options.encryptionThroughput, concurrency: options.concurrency };
  const run = (log: LogMode, l: WriteLoad, label: string): Promise<WriteSamples> =>
    benchEmbeddedWrites(l, { plaintextLogForBenchmark: log === 'plaintext' }, label);

  const before = os.loadavg()[0] ?? Number.NaN;
  await run('sealed', { writes: 20, throughputWrites: 4 * load.concurrency, concurrency: load.concurrency }, 'encryption warm-up');
  const samples: Record<LogMode, WriteSamples[]> = { plaintext: [], sealed: [] };
  const runs: EncryptionRun[] = [];
  for (let round = 0; round < options.encryptionRounds; round += 1) {
    const order: LogMode[] = round % 2 === 0 ? ['plaintext', 'sealed'] : ['sealed', 'plaintext'];
    for (const log of order) {
      const s = await run(log, load, `encryption round ${round + 1}/${options.encryptionRounds} ${log}`);
      samples[log].push(s);
      runs.push({ round: round + 1, log, write: summarizeWrites(s) });
    }
  }
  const loadAverage = { before, after: os.loadavg()[0] ?? Number.NaN };
  const plaintext = summarizeWrites(poolWrites(samples.plaintext));
  const sealed = summarizeWrites(poolWrites(samples.sealed));
  const perSecondOf = (round: number, log: LogMode) => runs.find((r) => r.round === round && r.log === log)?.write.throughput.perSecond ?? Number.NaN;
  const throughputLossPct = lossPct(plaintext.throughput.perSecond, sealed.throughput.perSecond);
  const p50Overhead = sealed.sequential.p50 - plaintext.sequential.p50;
  progress(`encryption: sealed log ${throughputLossPct.toFixed(1)}% fewer writes/s, sequential p50 ${p50Overhead >= 0 ? '+' : ''}${p50Overhead.toFixed(2)} ms`);

  const crypto = await measureCryptoOps(options.cryptoOps);
  return {
    writePath: {
      load, loadAverage, runs, plaintext, sealed, throughputLossPct,
      throughputLossPctByRound: Array.from({ length: options.encryptionRounds }, (_, i) => lossPct(perSecondOf(i + 1, 'plaintext'), perSecondOf(i + 1, 'sealed'))),
      sequentialP50OverheadMs: p50Overhead,
      sequentialP95OverheadMs: sealed.sequential.p95 - plaintext.sequential.p95,
      concurrentP50OverheadMs: sealed.throughput.latency.p50 - plaintext.throughput.latency.p50,
    },
    crypto,
  };
}
