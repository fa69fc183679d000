/**
 * Sizes of one bench run, from flags (`--records 20000`) or env (`BENCH_RECORDS=20000`).
 * Defaults take about 4–5 minutes on a 2-core machine (the distributed writes dominate);
 * `--quick` is a smoke run of the same phases with small sizes (a few minutes); `--large` adds the 100k-record
 * search step (its seeding and 100k queries add several minutes); `--encryption-only` runs just
 * the encryption section (embedded A/B and crypto operations; no engines needed, ~1.5 min).
 * Every run that includes embedded also runs the erasure A/B (secureErasure off, then on).
 */
export type RuntimeName = 'embedded' | 'distributed';

export interface BenchOptions {
  /** Sequential writes per runtime (latency of one write, read-your-writes included). */
  writes: number;
  /** Writes of the throughput phase, sent by `concurrency` writers at once. */
  throughputWrites: number;
  concurrency: number;
  /** Write→searchable probes per runtime. */
  visibilityProbes: number;
  /** Distinct search queries per dataset size. */
  searches: number;
  /** Capabilities revoked, each followed by a read that must be denied. */
  revocations: number;
  /** Records deleted, each until its signed receipt says verified. */
  deletions: number;
  /** Dataset sizes of the search path, ascending; each is spread over `tenants` tenants. */
  datasetSizes: number[];
  tenants: number;
  /** Seconds of each ingest load (batch writes, async writes, memory.ingest); at least 1. */
  ingestSeconds: number;
  /** Seconds the distributed stack is measured at rest, before any load (docs/sizing.md, "At rest"). */
  idleSeconds: number;
  /** Sequential round trips per raw engine probe (Kafka, Redis, SQLite, ES single writes). */
  rawRoundTrips: number;
  /** Records of the raw Kafka throughput probes. */
  kafkaRecords: number;
  runtimes: RuntimeName[];
  /** Only the encryption section: no raw engines, no runtime phases besides its own writes. */
  encryptionOnly: boolean;
  /** Only the scale-out section: the distributed stack with 1, 2, 4 instances of each pipeline service under the memory.ingest load. */
  scale: boolean;
  /** Instances per pipeline service, one configuration each (--scale). */
  scaleInstances: number[];
  /** Rounds of the encryption A/B; each round runs the plaintext-log and the sealed-log runtime once. */
  encryptionRounds: number;
  /** Sequential writes per A/B runtime. */
  encryptionWrites: number;
  /** Writes of the concurrent phase per A/B runtime (by `concurrency` writers). */
  encryptionThroughput: number;
  /** Timed calls per warm crypto operation; the key-creating ones get a tenth (each is a durable key-store write). */
  cryptoOps: number;
  /** Sequential writes per runtime of the erasure A/B (secureErasure off, then on). */
  erasureWrites: number;
  /** Records deleted per runtime of the erasure A/B, each until its verified receipt. */
  erasureDeletions: number;
}

const HELP = `pnpm bench [options]      (each option also as env, e.g. BENCH_RECORDS=20000)
  --records N        search dataset size (default 10000)
  --large            also measure search at 100000 records (seeded below the API)
  --writes N         sequential writes per runtime (default 400)
  --throughput N     writes of the concurrent throughput phase (default 1000)
  --concurrency N    concurrent writers (default 8)
  --visibility N     write→searchable probes (default 100)
  --searches N       distinct queries per dataset size (default 1000)
  --revocations N    capabilities revoked, each followed by a read that must be denied (default 100)
  --deletions N      records deleted, each timed until its signed receipt says verified (default 30)
  --tenants N        tenants the dataset is spread over (default 100)
  --ingest-seconds N each ingest load: batch writes (4 clients × 500 items) and async writes (64 clients) (default 60, quick 5)
  --idle-seconds N   the distributed stack measured at rest before any load (default 60, quick 10)
  --raw N            sequential round trips per raw engine probe (default 2000)
  --kafka-records N  records of the raw Kafka throughput probes (default 20000)
  --only NAME        embedded | distributed (default both)
  --scale            only the scale-out section: the distributed stack with 1, 2 and 4 instances of
                     ingest-gateway, write-admission, projector and index-builder on 12 partitions, each
                     under the memory.ingest load for --ingest-seconds (~6 min at the default 60)
  --scale-instances L  the configurations of --scale (default 1,2,4)
  --quick            small sizes, a smoke run of every phase (a few minutes; CI runs it)
encryption cost on the write path (part of every run that includes embedded):
  --encryption-only       only this section: embedded A/B plus crypto operations; needs no engines
                          (~1.5 min; ~30 s with --quick)
  --encryption-rounds N   A/B rounds, each a plaintext-log and a sealed-log runtime on fresh data
                          dirs, the order alternating per round (default 6, quick 4)
  --encryption-writes N   sequential writes per A/B runtime (default 80, quick 25)
  --encryption-throughput N  concurrent-phase writes per A/B runtime (default 160, quick 48)
  --crypto-ops N          timed calls per warm ContentCodec operation (default 5000, quick 1000)
secure erasure cost (part of every run that includes embedded): the embedded runtime with
RuntimeOptions.secureErasure false, then true, each on a fresh data dir
  --erasure-writes N      sequential writes per runtime (default 400, quick 40)
  --erasure-deletions N   deletions per runtime, each until its verified receipt (default 30, quick 10)`;

export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv): BenchOptions {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${HELP}\n`);
      process.exit(0);
    }
    if (!arg.startsWith('--')) throw new Error(`unexpected argument "${arg}"\n${HELP}`);
    const name = arg.slice(2);
    const value = argv[i + 1];
    if (name === 'large' || name === 'quick' || name === 'encryption-only' || name === 'scale') flags.set(name, '1');
    else if (value === undefined || value.startsWith('--')) throw new Error(`--${name} needs a value`);
    else {
      flags.set(name, value);
      i += 1;
    }
  }
  const raw = (name: string): string | undefined => flags.get(name) ?? env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
  const on = (name: string): boolean => raw(name) === '1' || raw(name) === 'true';
  const quick = on('quick');
  const int = (name: string, fallback: number, quickValue: number): number => {
    const text = raw(name);
    if (text === undefined) return quick ? quickValue : fallback;
    if (!/^\d+$/.test(text) || Number(text) < 1) throw new Error(`--${name} must be a positive whole number, got "${text}"`);
    return Number(text);
  };
  const records = int('records', 10_000, 2_000);
  const large = on('large');
  const only = raw('only');
  if (only !== undefined && only !== 'embedded' && only !== 'distributed') throw new Error('--only must be embedded or distributed');
  return {
    writes: int('writes', 400, 40),
    throughputWrites: int('throughput', 1000, 80),
    concurrency: int('concurrency', 8, 8),
    visibilityProbes: int('visibility', 100, 10),
    searches: int('searches', 1000, 60),
    revocations: int('revocations', 100, 20),
    deletions: int('deletions', 30, 5),
    datasetSizes: large && records < 100_000 ? [records, 100_000] : [records],
    tenants: int('tenants', 100, 100),
    ingestSeconds: int('ingest-seconds', 60, 5),
    idleSeconds: int('idle-seconds', 60, 10),
    rawRoundTrips: int('raw', 2000, 200),
    kafkaRecords: int('kafka-records', 20_000, 3_000),
    runtimes: only === undefined ? ['embedded', 'distributed'] : [only],
    encryptionOnly: on('encryption-only'),
    scale: on('scale'),
    scaleInstances: (raw('scale-instances') ?? '1,2,4').split(',').map((x) => {
      if (!/^\d+$/.test(x) || Number(x) < 1 || Number(x) > 12) throw new Error(`--scale-instances must list whole numbers 1–12, got "${x}"`);
      return Number(x);
    }),
    encryptionRounds: int('encryption-rounds', 6, 4),
    encryptionWrites: int('encryption-writes', 80, 25),
    encryptionThroughput: int('encryption-throughput', 160, 48),
    cryptoOps: int('crypto-ops', 5000, 1000),
    erasureWrites: int('erasure-writes', 400, 40),
    erasureDeletions: int('erasure-deletions', 30, 10),
  };
}
