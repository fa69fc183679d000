/**
 * `pnpm bench`: throughput and latency of the write and search paths of both runtimes, and
 * the raw engines measured in the same run, as ratios ours/raw (design §12), the cost of
 * sealing the log on the write path (design §8.5) and of secure erasure (bench/erasure.ts).
 * Numbers, not test thresholds. `pnpm bench --help` lists the sizes; progress goes to stderr,
 * the table to stdout, everything to bench-results/bench-<ISO>.json and bench-results/latest.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sweepNamespace } from './cleanup.ts';
import { resolveEngines } from './engines.ts';
import { parseOptions } from './options.ts';
import { measureRawKafka } from './raw-kafka.ts';
import { measureRoundTrips } from './raw-roundtrips.ts';
import { measureRawSearch } from './raw-search.ts';
import { measureEncryption } from './encryption.ts';
import { measureErasure } from './erasure.ts';
import { measurePlacement } from './placement.ts';
import { computeRatios, formatTable, writeResults, type BenchResult } from './report.ts';
import { benchDistributed, benchEmbedded } from './runtimes.ts';
import { formatScale, measureScale, writeScale } from './scale.ts';
import { elapsedMs, progress } from './stats.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const options = parseOptions(process.argv.slice(2), process.env);
const at = new Date().toISOString();
// One namespace isolates every topic, group, index and key this run creates on the shared engines.
const namespace = `bench-${randomBytes(4).toString('hex')}`;
const host = { platform: `${os.platform()} ${os.arch()}`, cpus: os.cpus().length, memoryGb: Math.round(os.totalmem() / 2 ** 30) };

function report(result: BenchResult): void {
  const file = writeResults(ROOT, result);
  process.stdout.write(formatTable(result));
  progress(`wrote ${path.relative(ROOT, file)} and bench-results/latest.json`);
}

/** Only the embedded runtime and the crypto operations: no engine is asked for, started or swept. */
async function encryptionOnly(): Promise<void> {
  progress(`encryption only; sizes ${JSON.stringify(options)}`);
  const encryption = await measureEncryption(options);
  report({ at, wallMs: elapsedMs(), node: process.version, host, namespace, options, encryption, ratios: [], cleanup: [] });
}

async function everything(): Promise<void> {
  const engines = await resolveEngines();
  progress(`namespace ${namespace}; sizes ${JSON.stringify(options)}`);

  const scratch = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-raw-'));
  let cleanup: string[] = [];
  try {
    // Raw engines first, with no runtime running, so they have the machine to themselves.
    const kafka = options.runtimes.includes('distributed')
      ? await measureRawKafka(engines.kafkaBrokers.split(','), `${namespace}.`, options.rawRoundTrips, options.kafkaRecords)
      : undefined;
    const roundTrips = await measureRoundTrips(
      engines.redisUrl, `gm:${namespace}:raw:`, engines.elasticsearchUrl, `gm-${namespace}-raw-single`, path.join(scratch, 'kv.db'), options.rawRoundTrips,
    );
    const search = await measureRawSearch(
      engines.elasticsearchUrl, `gm-${namespace}-raw-search`, path.join(scratch, 'fts.db'), options.datasetSizes, options.tenants, options.searches,
    );
    rmSync(scratch, { recursive: true, force: true });

    const embedded = options.runtimes.includes('embedded') ? await benchEmbedded(options) : undefined;
    const encryption = options.runtimes.includes('embedded') ? await measureEncryption(options) : undefined;
    const placement = options.runtimes.includes('embedded') ? await measurePlacement(options) : undefined;
    const erasure = options.runtimes.includes('embedded') ? await measureErasure(options) : undefined;
    const distributed = options.runtimes.includes('distributed') ? await benchDistributed(options, namespace, engines) : undefined;

    cleanup = await sweepNamespace(engines, namespace);
    progress(`cleanup: ${cleanup.join('; ')}`);
    const raw = { ...(kafka ? { kafka } : {}), roundTrips, search };
    const result: BenchResult = {
      at, wallMs: elapsedMs(), node: process.version,
      host, namespace, options, raw,
      ...(embedded ? { embedded } : {}),
      ...(distributed ? { distributed } : {}),
      ...(encryption ? { encryption } : {}),
      ...(placement ? { placement } : {}),
      ...(erasure ? { erasure } : {}),
      ratios: computeRatios({ raw, ...(embedded ? { embedded } : {}), ...(distributed ? { distributed } : {}) }),
      cleanup,
    };
    report(result);
  } catch (err) {
    // Whatever failed, the shared engines are left as they were found.
    rmSync(scratch, { recursive: true, force: true });
    if (cleanup.length === 0) progress(`cleanup after failure: ${(await sweepNamespace(engines, namespace)).join('; ')}`);
    throw err;
  }
}

/** Only the scale-out section (bench/scale.ts): raw Kafka and ES _bulk first, then 1, 2, 4 instances. */
async function scale(): Promise<void> {
  const engines = await resolveEngines();
  progress(`scale-out; namespace ${namespace}; ${options.ingestSeconds} s per configuration`);
  const result = await measureScale(options, namespace, engines);
  process.stdout.write(formatScale(result));
  progress(`wrote ${path.relative(ROOT, writeScale(result))}`);
}

await (options.encryptionOnly ? encryptionOnly() : options.scale ? scale() : everything());
