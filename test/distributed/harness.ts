import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack } from '@gm/distributed';
import { existsSync, readdirSync } from 'node:fs';
import { createKafkaBus } from '@gm/bus';
import { CONSUMER_GROUPS, TOPICS } from '@gm/contracts';
import { loadMasterKeys, openBusKeyStore, openContentCrypto } from '@gm/crypto';
import { RECORD_PROJECTION_PREFIXES } from '@gm/embedded';
import { MODEL_DIMENSIONS } from '@gm/embedding';
import { DistributedEnv, WithElasticsearch, WithRedis } from '@gm/config';
import { openIndex, openState, openSummaries, openVectors } from '@gm/adapters';
import { sweepNamespace } from '@gm/bench/cleanup';
import { apiClient, capabilityIssuer, type TestRuntime } from '../e2e/harness.ts';
import { engineFiles } from './engine-files.ts';

/** The groups that fold memory.events into the record projections, the index, the summaries and the vectors. */
const REPLAYED_GROUPS = [CONSUMER_GROUPS.projector, CONSUMER_GROUPS.indexBuilder, CONSUMER_GROUPS.summaryBuilder, CONSUMER_GROUPS.vectorIndexer];

/** Where the local launcher's Kafka keeps its segments (infra/local/engines.sh). */
const KAFKA_DATA = path.resolve(import.meta.dirname, '../../infra/local/.run/kafka/data');

/** The segment files (and their indexes) of every topic of a namespace, when this machine's broker holds them. */
function localSegmentFiles(namespace: string): string[] {
  if (!existsSync(KAFKA_DATA)) return [];
  return readdirSync(KAFKA_DATA)
    .filter((dir) => dir.startsWith(`${namespace}.`))
    .flatMap((dir) => readdirSync(path.join(KAFKA_DATA, dir)).filter((f) => f.endsWith('.log')).map((f) => path.join(KAFKA_DATA, dir, f)));
}

/** The distributed runtime under test: the stack's processes, and its namespace on the engines. */
export interface DistributedTestRuntime extends TestRuntime {
  readonly stack: Stack;
  readonly dataDir: string;
  readonly namespace: string;
}

/**
 * The seven services as separate processes on Kafka, Elasticsearch and Redis, in a namespace
 * of their own; the test reads the same Redis keys and Elasticsearch indices the services
 * write. Time is real here: `advance` waits, so suites keep their time steps short.
 */
export async function startDistributedTestRuntime(env: Record<string, string> = {}): Promise<DistributedTestRuntime> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-dist-e2e-'));
  const namespace = `e2e-${randomUUID().slice(0, 8)}`;
  const lines: string[] = [];
  const options = {
    dataDir, port: 0, namespace,
    onLine: (service: string, line: string) => lines.push(`[${service}] ${line}`),
    env: {
      MEMORY_LOG_LEVEL: 'info', MEMORY_EXPIRY_TICK: '50ms', MEMORY_DELETION_VERIFY_RETRY: '50ms',
      // 4 partitions, not the default 12: fewer transactional ids to fence per suite on one broker.
      MEMORY_RATE_LIMIT_PER_MINUTE: '100000', MEMORY_PARTITIONS: '4',
      // Receipts at once, saying `pending_compaction` where Elasticsearch's leases still hold a
      // deleted document: waiting up to 30 s for them is the crypto suite's to check, not every job's.
      MEMORY_ERASURE_MERGE_WAIT: '1ms', ...env,
    },
  };
  let stack = await startStack(options);
  const engineEnv = { ...DistributedEnv.parse(stack.env), ...WithRedis.parse(stack.env), ...WithElasticsearch.parse(stack.env) };
  // The namespace sweep (bench/cleanup.ts) speaks to one Redis and one Elasticsearch URL.
  const sweepRedisUrl = engineEnv.REDIS_URL;
  const sweepElasticsearchUrl = engineEnv.ELASTICSEARCH_URL[0];
  if (sweepRedisUrl === undefined || sweepElasticsearchUrl === undefined) {
    await stack.stop();
    throw new Error('the distributed suites need REDIS_URL and ELASTICSEARCH_URL (one Redis, one node URL first) to sweep their namespace');
  }
  const state = openState(engineEnv);
  const index = openIndex(engineEnv);
  const summaries = openSummaries(engineEnv);
  const vectors = openVectors(engineEnv, MODEL_DIMENSIONS);
  const api = apiClient(() => stack.url);
  const digest = async () => ({ projection: await state.projectionDigest(), index: await index.digest() });
  const rawBus = () => createKafkaBus({ brokers: engineEnv.KAFKA_BROKERS, clientId: `e2e-raw-${randomUUID().slice(0, 6)}`, topicPrefix: `${namespace}.` });
  const masterKeyEnv = () => ({ MEMORY_MASTER_KEY_FILE: stack.env.MEMORY_MASTER_KEY_FILE, MEMORY_MASTER_KEY: stack.env.MEMORY_MASTER_KEY });
  const credential = () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();

  return {
    kind: 'distributed',
    get stack() {
      return stack;
    },
    get url() {
      return stack.url;
    },
    dataDir,
    namespace,
    state,
    index,
    vectors,
    logs: { lines },
    now: () => Date.now(),
    advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    api,
    issue: capabilityIssuer(api, credential),
    issuerCredential: credential,
    digest,
    async restart() {
      await stack.stop();
      stack = await startStack(options);
    },
    async restartWith(overrides) {
      await stack.stop();
      options.env = { ...options.env, ...overrides };
      stack = await startStack(options);
    },
    async replay() {
      const before = await digest();
      await stack.stop();
      // The record projections and the index go; their groups read memory.events from the start.
      for (const prefix of RECORD_PROJECTION_PREFIXES) {
        const keys = await state.kv.keys(`${state.keys.prefix}${prefix}`);
        if (keys.length > 0) await state.kv.del(keys);
      }
      await index.clear();
      await summaries.clear();
      await vectors.clear();
      const raw = rawBus();
      try {
        for (const group of REPLAYED_GROUPS) await raw.resetGroup(group);
        stack = await startStack(options);
        const ends = await raw.endOffsets(TOPICS.events);
        for (const group of REPLAYED_GROUPS) {
          for (const [partition, end] of ends.entries()) {
            if (end > 0 && !(await raw.waitForCommitted(group, { topic: TOPICS.events, partition, offset: end - 1 }, 120_000))) {
              throw new Error(`${group} did not replay memory.events partition ${partition}`);
            }
          }
        }
      } finally {
        await raw.close();
      }
      return { before, after: await digest() };
    },
    async rawLog() {
      // The brokers' own segment files when the local launcher runs them; else every record as fetched.
      const segments = localSegmentFiles(namespace);
      if (segments.length > 0) return segments.map((file) => readFileSync(file).toString('latin1')).join('\n');
      const raw = rawBus();
      const parts: string[] = [];
      try {
        for (const topic of Object.values(TOPICS)) {
          for (const name of [topic, `${topic}.dlq`]) {
            for await (const m of raw.readAll(name)) parts.push(m.key, JSON.stringify(m.value), JSON.stringify(m.headers));
          }
        }
      } finally {
        await raw.close();
      }
      return parts.join('\n');
    },
    storeFiles: () => engineFiles({ redisUrl: sweepRedisUrl, elasticsearchUrl: sweepElasticsearchUrl }, namespace),
    async logReader() {
      const raw = rawBus();
      const store = await openBusKeyStore({ bus: raw, partitions: engineEnv.MEMORY_PARTITIONS });
      const crypto = await openContentCrypto({ masterKeys: loadMasterKeys(masterKeyEnv()), store });
      return { log: crypto.view(raw, 'open'), close: async () => { crypto.close(); await store.close(); await raw.close(); } };
    },
    masterKeyFile: () => masterKeyEnv().MEMORY_MASTER_KEY_FILE ?? '',
    receiptKeyFile: () => stack.env.MEMORY_RECEIPT_KEY_FILE ?? '',
    async close() {
      await stack.stop();
      await Promise.all([state.kv.close(), index.close(), summaries.close(), vectors.close()]);
      rmSync(dataDir, { recursive: true, force: true });
      // The namespace's topics, indices and keys: runs must not leave the shared engines fuller
      // (1,440 leftover topics had made this machine's broker and every later bench slower).
      const notes = await sweepNamespace(
        { kafkaBrokers: engineEnv.KAFKA_BROKERS.join(','), redisUrl: sweepRedisUrl, elasticsearchUrl: sweepElasticsearchUrl }, namespace,
      );
      const failed = notes.filter((note) => note.includes('FAILED'));
      if (failed.length > 0) process.stderr.write(`distributed e2e: cleanup of namespace ${namespace} incomplete: ${failed.join('; ')}\n`);
    },
  };
}
