import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createSqliteBus, memoryTopicSpecs, type Bus } from '@gm/bus';
import { TOPICS, type Clock, type DeletionTarget, type ServiceHandle } from '@gm/contracts';
import { createLogger, createMetrics, type Logger, type Metrics } from '@gm/observability';
import { createSqliteSearchIndex, createSqliteSummaryStore, type SearchIndex, type SearchQuery, type SummaryStore } from '@gm/search-index';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from '@gm/write-admission';
import { startPolicyProjector, startPrimaryTarget, startProjector } from '@gm/projector';
import { SUMMARY_BUILDER_GROUP, startIndexBuilder, startIndexTargets, startSummaryBuilder } from '@gm/index-builder';
import { startExpiryScheduler } from '@gm/expiry-scheduler';
import { startDeletionOrchestrator } from '@gm/deletion-orchestrator';
import { startReceiptSigner, startReceiptVerifier } from '@gm/receipt-verifier';
import { startRetrievalBroker } from '@gm/retrieval-broker';
import { loadPolicySet } from '@gm/policy';
import { periodic, systemClock } from '@gm/service-kit';
import {
  consumedAllCommands, createSqliteKeyStore, openContentCrypto, sweepTransitKeys, type ContentCrypto, type ContentRole, type KeyStore,
} from '@gm/crypto';
import type { RuntimeConfig } from './config.ts';
import { loadOrCreateCredentials, type Credentials } from './credentials.ts';
import { lockDataDir } from './lock.ts';
import { KEY_STORE_FILE_NAME, loadOrCreateMasterKeys } from './master-keys.ts';

/** Master key settings as the environment names them (see master-keys.ts). */
export type MasterKeyEnv = { MEMORY_MASTER_KEY_FILE?: string; MEMORY_MASTER_KEY?: string };

export const masterKeyEnvOf = (config: Pick<RuntimeConfig, 'masterKeyFile' | 'masterKey'>): MasterKeyEnv => ({
  ...(config.masterKeyFile === undefined ? {} : { MEMORY_MASTER_KEY_FILE: config.masterKeyFile }),
  ...(config.masterKey === undefined ? {} : { MEMORY_MASTER_KEY: config.masterKey }),
});

export { systemClock };

/** The copies the embedded runtime keeps, and its keys; a vector store arrives with a later issue. */
export const EMBEDDED_DELETION_TARGETS: DeletionTarget[] = ['primary', 'keyword', 'summary', 'retrieval_cache', 'evidence_packet', 'key'];


/** The durable stores of a data directory: the log (bus), the keys, the index and the state. */
export interface Stores {
  /** The log as stored: content on memory.commands / memory.events is sealed here. */
  bus: Bus;
  /** The key store (keys.db) and the keyring; `crypto.view(bus, role)` is a service's view of the log. */
  keyStore: KeyStore;
  crypto: ContentCrypto;
  /** Where the master keys came from (a file path or MEMORY_MASTER_KEY), for the start banner. */
  masterKeySource: string;
  index: SearchIndex;
  summaries: SummaryStore;
  state: StateStore;
  close(): Promise<void>;
}

export async function openStores(
  dataDir: string, partitions: number, clock: Clock, masterKeyEnv: MasterKeyEnv = {},
): Promise<Stores> {
  const epochMs = () => clock.now().getTime();
  mkdirSync(dataDir, { recursive: true });
  // Keys and master keys first: a lost or wrong master key stops the start before the log is read.
  const keyStore = createSqliteKeyStore({ file: path.join(dataDir, KEY_STORE_FILE_NAME), synchronous: 'NORMAL' });
  let crypto: ContentCrypto;
  let masterKeySource: string;
  try {
    const loaded = loadOrCreateMasterKeys(dataDir, masterKeyEnv, (await keyStore.all()).length > 0);
    masterKeySource = loaded.source;
    // rotate: KEKs still wrapped by an older master key are re-wrapped with the active one.
    crypto = await openContentCrypto({ masterKeys: loaded.masterKeys, store: keyStore, rotate: true, instanceId: 'embedded', clock: epochMs });
  } catch (err) {
    await keyStore.close();
    throw err;
  }
  const bus = createSqliteBus({ file: path.join(dataDir, 'bus.db'), defaultPartitions: partitions });
  // The key → partition map depends on the count: ensureTopics refuses another count for an
  // existing topic (PartitionCountMismatchError) rather than remap subjects.
  try {
    await bus.ensureTopics(memoryTopicSpecs(partitions));
  } catch (err) {
    await bus.close();
    await keyStore.close();
    crypto.close();
    throw err;
  }
  const index = createSqliteSearchIndex({ file: path.join(dataDir, 'index.db') });
  const summaries = createSqliteSummaryStore({ file: path.join(dataDir, 'summaries.db') });
  const kv = createSqliteKeyValueStore({ file: path.join(dataDir, 'state.db'), now: () => clock.now().getTime() });
  const state = new StateStore(kv, 'gm:', () => clock.now().getTime());
  return {
    bus, keyStore, crypto, masterKeySource, index, summaries, state,
    close: async () => {
      crypto.close();
      await keyStore.close();
      await bus.close();
      await index.close();
      await summaries.close();
      await kv.close();
    },
  };
}

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
   * Sees every query the read path sends to the search index, before it runs. Tests use it
   * to prove partition-first retrieval (§6.3): no query ever names a partition the asker
   * was not authorised for.
   */
  observeSearch?: (query: SearchQuery) => void;
  /**
   * Benchmarks only (`pnpm bench` measures the cost of encryption against it): services use the
   * log without sealing, so content lands in bus.db in clear and forgets destroy no usable key.
   * Never set by configuration.
   */
  plaintextLogForBenchmark?: boolean;
}

/** All seven services in one process, talking only through the bus (design §0, §4). */
export async function startEmbeddedRuntime(config: RuntimeConfig, options: RuntimeOptions = {}): Promise<EmbeddedRuntime> {
  // Before anything opens: an invalid policy set (PolicySetError) leaves nothing half-started.
  const policySet = loadPolicySet(config.policyDir);
  const clock = options.clock ?? systemClock;
  mkdirSync(config.dataDir, { recursive: true });
  const unlock = lockDataDir(config.dataDir);
  const log = createLogger({ name: 'governed-memory', level: config.logLevel, ...(options.logDestination ? { destination: options.logDestination } : {}) });
  const metrics = createMetrics();
  const credentials = await loadOrCreateCredentials(config.dataDir, config.issuerCredential);
  let stores: Stores;
  try {
    stores = await openStores(config.dataDir, config.partitions, clock, masterKeyEnvOf(config));
  } catch (err) {
    // A wrong master key (or any store that will not open) leaves the directory free for the next try.
    unlock();
    throw err;
  }
  const { index, summaries, state, crypto, keyStore } = stores;
  // Each service sees the log through its role (content-crypto.ts): the log itself holds only envelopes.
  const view = (role: ContentRole): Bus => (options.plaintextLogForBenchmark === true ? stores.bus : crypto.view(stores.bus, role));
  const bus = view('open');
  const redacted = view('redact');
  const edge = view('edge');
  const handles: ServiceHandle[] = [];
  const child = (service: string) => log.child({ service });

  handles.push(await startProjector({ bus, state, log: child('projector') }));
  handles.push(await startPrimaryTarget({ bus, state, clock }));
  handles.push(await startPolicyProjector({ bus, state, log: child('policy-projector') }));
  handles.push(await startIndexBuilder({ bus, index, state }));
  handles.push(await startSummaryBuilder({ bus, index, state, summaries }));
  handles.push(await startIndexTargets({ bus, index, clock, summaries: { store: summaries, state } }));
  handles.push(await startExpiryScheduler({ bus: redacted, state, clock, log: child('expiry-scheduler'), tickMs: config.expiryTickMs }));
  handles.push(
    await startDeletionOrchestrator({
      bus: redacted, state, clock, log: child('deletion-orchestrator'), metrics, targets: EMBEDDED_DELETION_TARGETS,
      deadlineMs: config.deletionDeadlineMs, verifyRetryMs: config.deletionVerifyRetryMs, tickMs: 250,
    }),
  );
  handles.push(await startReceiptVerifier({ bus, index, summaries, state, clock, policySet, keys: { keyring: crypto.keyring, store: keyStore } }));
  handles.push(await startReceiptSigner({ bus, state, clock, log: child('receipt-verifier'), metrics, keys: credentials.receipt }));
  const sweep = () => sweepTransitKeys({
    keyring: crypto.keyring, clock: () => clock.now().getTime(), consumedAll: () => consumedAllCommands(stores.bus, WRITE_ADMISSION_GROUP),
  });
  handles.push(periodic(60_000, async () => {
    const count = await sweep();
    if (count > 0) log.info({ count }, 'transit keys destroyed');
  }, log, 'transit key sweep'));
  handles.push(
    await startWriteAdmission({
      bus, log: child('write-admission'), metrics, decide: { ttl: config.ttl, idempotencyWindowMs: config.idempotencyWindowMs },
      snapshots: { store: state.admission, intervalMs: config.admission.snapshotIntervalMs, maxEntries: config.admission.maxEntries },
    }),
  );
  const broker = await startRetrievalBroker({
    bus: edge, index: options.observeSearch ? observedIndex(index, options.observeSearch) : index, summaries, state, clock, metrics,
    log: child('retrieval-broker'),
    signing: credentials.signing,
    policySet,
    issuerName: config.issuerName,
    issuerCredential: credentials.issuerCredential,
    instanceId: 'embedded',
    host: config.host,
    port: config.port,
    config: {
      replyTimeoutMs: config.replyTimeoutMs, readYourWritesTimeoutMs: config.readYourWritesTimeoutMs,
      packetTtlMs: config.packetTtlMs, cacheTtlMs: config.cacheTtlMs, rateLimitPerMinute: config.rateLimitPerMinute,
      bodyLimitBytes: config.bodyLimitBytes, requestTimeoutMs: config.requestTimeoutMs,
    },
    ready: async () => (await state.kv.ping()) && (await bus.endOffsets(TOPICS.events)).length > 0,
  });

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
      await caughtUp(bus, SUMMARY_BUILDER_GROUP, TOPICS.events);
      return { projection: await state.projectionDigest(), index: await index.digest(), summaries: await summaries.digest() };
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await broker.close();
      // No new writes now; let the summaries finish what the log already holds, so a stopped
      // data directory is a complete fold (replay compares against it).
      await caughtUp(bus, SUMMARY_BUILDER_GROUP, TOPICS.events, 5_000);
      for (const h of handles.reverse()) await h.close();
      await stores.close();
      unlock();
    },
  };
}

function observedIndex(index: SearchIndex, observe: (query: SearchQuery) => void): SearchIndex {
  const search: SearchIndex['search'] = (query) => {
    observe(structuredClone(query));
    return index.search(query);
  };
  // Every other method stays the adapter's own (bound: adapters may be class instances).
  return new Proxy(index, {
    get: (target, prop, receiver) => {
      if (prop === 'search') return search;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Waits (bounded) until a consumer group has committed every message of a topic written so far. */
async function caughtUp(bus: Bus, groupId: string, topic: string, timeoutMs = 10_000): Promise<void> {
  const ends = await bus.endOffsets(topic);
  for (const [partition, end] of ends.entries()) {
    if (end > 0) await bus.waitForCommitted(groupId, { topic, partition, offset: end - 1 }, timeoutMs);
  }
}
