import type { FastifyInstance } from 'fastify';
import { meteredBus, tracedBus, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, TOPICS, type Clock } from '@gm/contracts';
import { writeServiceAddress } from '@gm/config';
import { createLogger, createMetrics, mergedExposition, type Logger, type Metrics, type MetricsSnapshot } from '@gm/observability';
import { loadEmbeddingModel } from '@gm/embedding';
import type { SemanticLeg } from '@gm/retrieval';
import { startRetrievalBroker } from '@gm/retrieval-broker';
import { loadPolicySet } from '@gm/policy';
import { sharedMsOf, systemClock } from '@gm/time';
import { shareFileWriteLocks } from '@gm/thread-lock';
import { ConfigError, type RuntimeConfig } from './config.ts';
import { loadOrCreateCredentials, type Credentials } from './credentials.ts';
import { ownerOnly } from './data-dir-modes.ts';
import { ensureKeyLayout } from './key-layout.ts';
import { lockDataDir } from './lock.ts';
import { logView, startPipeline, transitKeySweep, type PipelineContext, type PipelinePart } from './pipeline.ts';
import { startPipelineThread, type PipelineThread } from './pipeline-thread.ts';
import { masterKeyBesideData } from './master-keys.ts';
import { masterKeyEnvOf, openStores, type Stores } from './stores.ts';

export { systemClock };

export interface EmbeddedRuntime extends Stores {
  url: string;
  app: FastifyInstance;
  config: RuntimeConfig;
  credentials: Credentials;
  log: Logger;
  metrics: Metrics;
  digest(): Promise<{ projection: string; index: string; summaries: string }>;
  /** Destroys the transit keys that are past (what the background sweeper does every minute); returns how many. */
  sweepTransitKeys(): Promise<number>;
}

export interface RuntimeOptions {
  clock?: Clock;
  logDestination?: NodeJS.WritableStream;
  /**
   * Benchmarks only (`pnpm bench` measures the cost of encryption against it): services use the
   * log without sealing, so content lands in bus.db in clear and forgets destroy no usable key.
   * Never set by configuration.
   */
  plaintextLogForBenchmark?: boolean;
  /**
   * Default true: SQLite secure_delete, FTS5 secure-delete and a TRUNCATE checkpoint after
   * purges, so erased content leaves no bytes in the data files (docs/deletion.md). False is for
   * `pnpm bench`'s erasure A/B only, which measures what that costs. Never set by configuration.
   */
  secureErasure?: boolean;
  /**
   * Called when the pipeline thread stops on its own (a crash): no write is admitted after it.
   * `pnpm start` exits then, for its supervisor to restart it; the failure is logged either way.
   */
  onPipelineFailure?: (err: Error) => void;
}

/** The consumer services, wherever they run (MEMORY_PIPELINE). */
interface RunningPipeline {
  metrics(): Promise<MetricsSnapshot[]>;
  close(): Promise<void>;
}

async function runPipeline(ctx: PipelineContext, options: RuntimeOptions): Promise<RunningPipeline> {
  if (ctx.config.pipeline === 'inline') {
    const handles = await startPipeline(ctx);
    return {
      // The services count into the runtime's own registry: nothing to add.
      metrics: async () => [],
      close: async () => {
        for (const h of handles.reverse()) await h.close();
      },
    };
  }
  let clock: SharedArrayBuffer | undefined;
  if (options.clock !== undefined) {
    clock = sharedMsOf(options.clock);
    if (clock === undefined) {
      throw new ConfigError('the pipeline thread reads its time from shared memory: pass a ManualClock, or set MEMORY_PIPELINE=inline for another clock');
    }
  }
  const writeLocks = shareFileWriteLocks();
  const start = (part: PipelinePart) => startPipelineThread(
    { part, config: ctx.config, receiptKeys: ctx.receiptKeys, plaintextLog: ctx.plaintextLog, secureErasure: options.secureErasure ?? true, clock, writeLocks },
    { destination: options.logDestination ?? process.stdout, log: ctx.log, onFailure: (err) => {
      ctx.log.error({ err, part }, 'a pipeline thread stopped; no write is admitted until a restart');
      options.onPipelineFailure?.(err);
    } },
  );
  // Two threads: what writes wait for, and what follows them (pipeline.ts, PipelinePart).
  const started = await Promise.allSettled([start('write'), start('derived')]);
  const threads = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed !== undefined) {
    for (const thread of threads) await thread.close();
    throw failed.reason;
  }
  const [write, derived] = threads as [PipelineThread, PipelineThread];
  return {
    metrics: async () => (await Promise.all(threads.map((t) => t.metrics()))).flat(),
    // What follows writes first: it waits on the write side's progress (a summary on the index), never the reverse.
    close: async () => {
      await derived.close();
      await write.close();
    },
  };
}

/** All seven services in one process, talking only through the bus (design §0, §4). */
export async function startEmbeddedRuntime(config: RuntimeConfig, options: RuntimeOptions = {}): Promise<EmbeddedRuntime> {
  // Before anything opens: an invalid policy set (PolicySetError) leaves nothing half-started.
  const policySet = loadPolicySet(config.policyDir);
  const clock = options.clock ?? systemClock;
  ownerOnly(config.dataDir);
  const unlock = lockDataDir(config.dataDir);
  const log = createLogger({ name: 'governed-memory', level: config.logLevel, ...(options.logDestination ? { destination: options.logDestination } : {}) });
  const metrics = createMetrics();
  const credentials = await loadOrCreateCredentials(config.dataDir, config.issuerCredential);
  let stores: Stores;
  try {
    await ensureKeyLayout(config.dataDir, config.partitions, clock, masterKeyEnvOf(config), log);
    stores = await openStores(config.dataDir, config.partitions, clock, masterKeyEnvOf(config), { instanceId: 'embedded', rotate: true, secureErasure: options.secureErasure ?? true });
  } catch (err) {
    // A wrong master key (or any store that will not open) leaves the directory free for the next try.
    unlock();
    throw err;
  }
  const { index, summaries, state } = stores;
  if (masterKeyBesideData(config.dataDir, stores.masterKeySource)) {
    log.warn(
      { masterKeyFile: stores.masterKeySource, dataDir: config.dataDir },
      'the master key is inside the data directory: a copy of the directory is a copy of the key, and encryption at rest does not protect it; '
        + 'set MEMORY_MASTER_KEY_FILE (a file elsewhere) or MEMORY_MASTER_KEY (docs/encryption.md#threat-model)',
    );
  }
  const plaintextLog = options.plaintextLogForBenchmark === true;
  const edge = tracedBus(meteredBus(logView(stores, 'edge', plaintextLog), metrics), 'gm_log');
  let pipeline: RunningPipeline;
  let semantic: SemanticLeg | undefined;
  try {
    // The query model first: a missing model stops the start before the pipeline thread runs.
    if (config.semantic !== undefined) semantic = { vectors: stores.vectors, model: await loadEmbeddingModel(config.semantic.modelDir, { shared: true }) };
    pipeline = await runPipeline({ stores, config, clock, log, metrics, policySet, receiptKeys: credentials.receipt, plaintextLog }, options);
  } catch (err) {
    await stores.close();
    unlock();
    throw err;
  }
  const sweep = transitKeySweep(stores, clock);
  const broker = await startRetrievalBroker({
    bus: edge, index, summaries, state, clock, metrics,
    ...(semantic === undefined ? {} : { semantic }),
    // The pipeline thread counts into a registry of its own: /metrics shows both as one.
    exposition: async () => mergedExposition([await metrics.registry.getMetricsAsJSON(), ...(await pipeline.metrics())]),
    log: log.child({ service: 'retrieval-broker' }),
    signing: credentials.signing,
    policySet,
    issuerName: config.issuerName,
    issuerCredential: credentials.issuerCredential,
    instanceId: 'embedded',
    host: config.host,
    port: config.port,
    ...(config.consoleDir === undefined ? {} : { consoleDir: config.consoleDir }),
    config: {
      replyTimeoutMs: config.replyTimeoutMs, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
      packetTtlMs: config.packetTtlMs, cacheTtlMs: config.cacheTtlMs, rateLimitPerMinute: config.rateLimitPerMinute,
      bodyLimitBytes: config.bodyLimitBytes, requestTimeoutMs: config.requestTimeoutMs, asyncBacklogLimit: config.asyncBacklogLimit,
      queryAudit: config.queryAudit, adminBootstrap: config.adminBootstrap, bootstrapAdmins: config.bootstrapAdmins,
      ...(config.opsTenants === undefined ? {} : { opsTenants: config.opsTenants }),
    },
    ready: async () => (await state.kv.ping()) && (await stores.bus.endOffsets(TOPICS.events)).length > 0,
  });

  // memctl and the MCP server find the runtime from its data directory when no MEMORY_URL says
  // where it is, so a port other than the default needs no second setting (docs/agents.md).
  const forgetAddress = writeServiceAddress(config.dataDir, broker.url);
  let closed = false;
  return {
    ...stores,
    url: broker.url,
    app: broker.app,
    config,
    credentials,
    log,
    metrics,
    sweepTransitKeys: sweep,
    digest: async () => {
      // Summaries follow the index in their own group: digest them once they caught up with the log.
      await caughtUp(stores.bus, CONSUMER_GROUPS.summaryBuilder, TOPICS.events);
      return { projection: await state.projectionDigest(), index: await index.digest(), summaries: await summaries.digest() };
    },
    close: async () => {
      if (closed) return;
      closed = true;
      forgetAddress();
      await broker.close();
      // No new writes now; let the summaries finish what the log already holds, so a stopped
      // data directory is a complete fold (replay compares against it).
      await caughtUp(stores.bus, CONSUMER_GROUPS.summaryBuilder, TOPICS.events, 5_000);
      await pipeline.close();
      await stores.close();
      unlock();
    },
  };
}

/** Waits (bounded) until a consumer group has committed every message of a topic written so far. */
async function caughtUp(bus: Bus, groupId: string, topic: string, timeoutMs = 10_000): Promise<void> {
  const ends = await bus.endOffsets(topic);
  for (const [partition, end] of ends.entries()) {
    if (end > 0) await bus.waitForCommitted(groupId, { topic, partition, offset: end - 1 }, timeoutMs);
  }
}
