import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RecordMeta } from '@gm/contracts';
import { startStack } from '@gm/distributed';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime, type RuntimeOptions } from '@gm/embedded';
import type { SearchIndex, VectorIndex } from '@gm/search-index';
import { MODEL_DIMENSIONS } from '@gm/embedding';
import { DistributedEnv } from '@gm/config';
import { openBus, openIndex, openState, openVectors } from '@gm/adapters';
import type { Bus } from '@gm/bus';
import type { StateStore } from '@gm/state-store';
import { contentOf, tenantOf } from './corpus.ts';
import { issueToken, type HttpTarget } from './administration.ts';
import { formatIdle, idleCpu, IDLE_SETTLE_SECONDS, stackProcesses, type IdleCpu } from './idle.ts';
import {
  WRITES_TENANT, measureSearch, measureWritePath, measureWrites, write, writeBody,
  type MeasuredProcesses, type SearchStepResult, type WriteLoad, type WritePathResult, type WriteSamples,
} from './http-probe.ts';
import type { BenchOptions } from './options.ts';
import type { Engines } from './engines.ts';
import { measureDeletion, type DeletionResult } from './deletion.ts';
import { measureIngest, type IngestResult } from './ingest.ts';
import { measureRevocation, type RevocationResult } from './revocation.ts';
import { seedBelowApi } from './seed.ts';
import { progress } from './stats.ts';

export interface RuntimeResult {
  /** From the call to the API answering (embedded: in-process; distributed: nine processes). */
  startMs: number;
  write: WritePathResult;
  revocation: RevocationResult;
  deletion: DeletionResult;
  search: Array<SearchStepResult & { seedMs: number }>;
  /** Batch and asynchronous writes under load (docs/ingest.md). */
  ingest: IngestResult;
  /** The distributed stack and its engines at rest, before any load. */
  idle?: IdleCpu;
}

const TEMPLATE_ID = 'bench-template';

/** The write, visibility and search phases, the same for both runtimes. */
async function benchApi(
  target: HttpTarget, stores: { index: SearchIndex; state: StateStore; vectors?: VectorIndex; log: Pick<Bus, 'readAll'> }, options: BenchOptions, label: string, startMs: number,
  measured: MeasuredProcesses,
  kafka?: { brokers: string[]; namespace: string },
): Promise<RuntimeResult> {
  const writePath = await measureWritePath(target, options, label, measured);
  const revocation = await measureRevocation(target, tenantOf(1, options.tenants), options.revocations, label);
  // Distributed receipts wait for Elasticsearch's lease renewal: five deletions share each wait.
  const deletion = await measureDeletion(target, tenantOf(2, options.tenants), options.deletions, label, stores.log, kafka === undefined ? 1 : 5);

  // The seed template: one record through the API, read back from the runtime's record hash.
  const tenant = tenantOf(0, options.tenants);
  await write(target, await issueToken(target, tenant), writeBody(contentOf(3_000_000), 'subj-template', TEMPLATE_ID));
  const template: RecordMeta | null = await stores.state.records.get(tenant, TEMPLATE_ID);
  if (template === null) throw new Error(`${label}: the template record is not in the record hash after its write`);

  const search: RuntimeResult['search'] = [];
  let seeded = 0;
  for (const size of options.datasetSizes) {
    const started = performance.now();
    await seedBelowApi(stores.index, stores.state, template, seeded, size, options.tenants, label, stores.vectors);
    const seedMs = performance.now() - started;
    seeded = size;
    search.push({ ...(await measureSearch(target, size, options, label, 'lexical')), seedMs });
    // Where the runtime keeps vectors, the default mode too: both legs, fused.
    if (stores.vectors !== undefined) search.push({ ...(await measureSearch(target, size, options, label, 'hybrid')), seedMs });
  }
  // Last: the ingest loads add some 100,000 records, which the search figures above must not carry.
  const ingest = await measureIngest(target, 'bench-ingest', options.ingestSeconds, label, kafka && { ...kafka, processes: measured });
  return { startMs, write: writePath, revocation, deletion, search, ingest };
}

/**
 * MEMORY_SEMANTIC of the bench's environment, for the embedded runtime as for the stack (whose
 * services inherit it): without it, `MEMORY_SEMANTIC=off pnpm bench` measured the embedded
 * runtime with its model all the same.
 */
const semanticSetting = (): Record<string, string> =>
  (process.env.MEMORY_SEMANTIC === undefined ? {} : { MEMORY_SEMANTIC: process.env.MEMORY_SEMANTIC });

/** An embedded runtime on a fresh data directory, closed and removed once `use` is done. */
export async function withEmbeddedRuntime<T>(
  label: string, runtimeOptions: RuntimeOptions, use: (runtime: EmbeddedRuntime, target: HttpTarget, startMs: number) => Promise<T>,
  env: Record<string, string> = {},
): Promise<T> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-embedded-'));
  try {
    const started = performance.now();
    const runtime = await startEmbeddedRuntime(
      // error, not warn: the async load's backlog refusals (retriable 503s, logged as warnings) would bury the table.
      loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000', ...semanticSetting(), ...env }),
      runtimeOptions,
    );
    const startMs = performance.now() - started;
    progress(`${label}: runtime started in ${startMs.toFixed(0)} ms at ${runtime.url}`);
    try {
      return await use(runtime, { url: runtime.url, issuerCredential: runtime.credentials.issuerCredential }, startMs);
    } finally {
      await runtime.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The embedded runtime runs in the bench's own process: its CPU figure holds the HTTP writers'
 * too, so it is an upper bound of the runtime's.
 */
const EMBEDDED_PROCESS: MeasuredProcesses = [{ name: 'embedded (runtime + bench client)', pid: process.pid }];

export function benchEmbedded(options: BenchOptions): Promise<RuntimeResult> {
  return withEmbeddedRuntime('embedded', {}, (runtime, target, startMs) => benchApi(target, { index: runtime.index, state: runtime.state, log: runtime.bus, ...(runtime.config.semantic ? { vectors: runtime.vectors } : {}) }, options, 'embedded', startMs, EMBEDDED_PROCESS));
}

/** The write phases only (no visibility, search or deletion), on a fresh embedded runtime; `env` adds to its configuration. */
export function benchEmbeddedWrites(load: WriteLoad, runtimeOptions: RuntimeOptions, label: string, env: Record<string, string> = {}): Promise<WriteSamples> {
  return withEmbeddedRuntime(label, runtimeOptions, async (_runtime, target) => measureWrites(target, await issueToken(target, WRITES_TENANT), load, label), env);
}

export async function benchDistributed(options: BenchOptions, namespace: string, engines: Engines): Promise<RuntimeResult> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-distributed-'));
  // Each service's last lines: a dead one's stack trace is not pushed out by the others' logs.
  const recent = new Map<string, string[]>();
  try {
    const started = performance.now();
    const stack = await startStack({
      dataDir, port: 0, namespace,
      env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' },
      onLine: (service, line) => {
        const lines = recent.get(service) ?? [];
        lines.push(`[${service}] ${line}`);
        if (lines.length > 20) lines.shift();
        recent.set(service, lines);
      },
    });
    const startMs = performance.now() - started;
    progress(`distributed: ${stack.children.size} services started in ${startMs.toFixed(0)} ms at ${stack.url}`);
    // The seeder opens the stores exactly as the services do (same key prefix, same index).
    const env = {
      ...DistributedEnv.parse({ KAFKA_BROKERS: engines.kafkaBrokers, MEMORY_NAMESPACE: namespace }),
      REDIS_URL: engines.redisUrl, ELASTICSEARCH_URL: engines.elasticsearchUrl,
    };
    const state = openState(env);
    const index = openIndex(env);
    // Where the stack keeps vectors (it runs a vector-indexer unless MEMORY_SEMANTIC=off), the
    // seeder writes them too, and search is measured hybrid beside lexical.
    const vectors = stack.children.has('vector-indexer') ? openVectors(env, MODEL_DIMENSIONS) : undefined;
    let log: Bus | undefined;
    try {
      // The deletion phase reads its jobs' messages back from the stack's topics (deletion-hops.ts);
      // opened in here, so the stack is stopped even when the broker refuses it.
      log = await openBus(env, `${namespace}-bench-reader`);
      const issuerCredential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
      // Every service process of the stack and the local engines, when this checkout runs them.
      const measured = stackProcesses(stack);
      progress(`distributed: at rest for ${IDLE_SETTLE_SECONDS} s, then measured for ${options.idleSeconds} s`);
      await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_SECONDS * 1000));
      const idle = await idleCpu(measured, options.idleSeconds);
      progress(`distributed: ${formatIdle(idle)}`);
      const result = await benchApi({ url: stack.url, issuerCredential }, { index, state, log, ...(vectors === undefined ? {} : { vectors }) }, options, 'distributed', startMs, measured, {
        brokers: engines.kafkaBrokers.split(','), namespace,
      });
      result.idle = idle;
      // A service that died mid-run leaves figures that look whole (its CPU reads n/a): fail instead.
      const died = [...stack.children].flatMap(([name, children]) => children
        .filter((child) => child.exitCode !== null || child.signalCode !== null)
        .map((child) => `${name} (${child.exitCode === null ? `signal ${String(child.signalCode)}` : `exit code ${child.exitCode}`})`));
      if (died.length > 0) throw new Error(`distributed: ${died.join(', ')} died during the bench`);
      return result;
    } catch (err) {
      process.stderr.write(`last log lines of each service:\n${[...recent.values()].flat().join('\n')}\n`);
      throw err;
    } finally {
      await index.close();
      await vectors?.close();
      await log?.close();
      await state.kv.close();
      await stack.stop();
      progress('distributed: services stopped');
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
