/**
 * Opens the real adapters of the distributed runtime from a service's environment (the shapes
 * of @gm/config): wiring only, every port's behaviour is its own package's.
 */
import { KEPT_FOREVER_TOPICS, createKafkaBus, memoryTopicSpecs, topicDurabilityProblems, type Bus, type CommitNotices, type TopicReplication } from '@gm/bus';
import { redisConnectionOf, type DistributedEnv, type WithMasterKeys, type WithRedis } from '@gm/config';
import {
  loadMasterKeys, openBusKeyStore, openContentCrypto, redactedBus, transitKeyId,
  type ContentRole, type KeyStore, type Keyring, type RotationResult,
} from '@gm/crypto';
import {
  createElasticsearchSearchIndex, createElasticsearchSummaryStore, createElasticsearchVectorIndex, type SearchIndex, type SummaryStore, type VectorIndex,
} from '@gm/search-index';
import { StateStore, createRedisCommitNotices, createRedisKeyValueStore, type RedisTarget } from '@gm/state-store';
import type { z } from 'zod';

/** The replication the deployment asks of the topics it creates; none set: the broker's defaults. */
export function topicReplicationOf(env: DistributedEnv): TopicReplication | undefined {
  const factor = env.MEMORY_KAFKA_REPLICATION_FACTOR;
  if (factor === undefined) return undefined;
  return { factor, minInsyncReplicas: env.MEMORY_KAFKA_MIN_INSYNC_REPLICAS ?? Math.max(1, factor - 1) };
}

/** A production deployment's topics fall short of its settings (docs/reliability.md). */
export class UnsafeTopicsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`MEMORY_PRODUCTION: refusing to start on topics that could lose acknowledged records:\n  ${problems.join('\n  ')}`);
    this.name = 'UnsafeTopicsError';
  }
}

export async function openBus(env: DistributedEnv, clientId: string, commitNotices?: CommitNotices): Promise<Bus> {
  const topicPrefix = env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}.` : '';
  const replication = topicReplicationOf(env);
  const bus = createKafkaBus({
    brokers: env.KAFKA_BROKERS,
    clientId,
    topicPrefix,
    transactionalIdPrefix: env.MEMORY_NAMESPACE ? `gm.${env.MEMORY_NAMESPACE}` : 'gm',
    ...(replication ? { replication } : {}),
    ...(commitNotices ? { commitNotices } : {}),
  });
  const specs = memoryTopicSpecs(env.MEMORY_PARTITIONS);
  await bus.ensureTopics(specs);
  if (env.MEMORY_PRODUCTION) {
    // Judged on the topics as the cluster has them: created earlier, by hand, or by another version.
    const factor = replication?.factor ?? 3;
    const problems = await topicDurabilityProblems({ brokers: env.KAFKA_BROKERS, topicPrefix }, specs.map((s) => s.name), {
      replicationFactor: factor, minInsyncReplicas: replication?.minInsyncReplicas ?? Math.max(1, factor - 1), keptForever: KEPT_FOREVER_TOPICS,
    });
    if (problems.length > 0) {
      await bus.close();
      throw new UnsafeTopicsError(problems);
    }
  }
  return bus;
}

type RedisEnv = DistributedEnv & z.infer<typeof WithRedis>;

const redisTargetOf = (env: RedisEnv): RedisTarget => {
  const connection = redisConnectionOf(env);
  return connection.kind === 'url' ? { url: connection.url } : { sentinels: connection.sentinels, name: connection.name };
};

/** Keys and channels of a deployment in Redis start with this. */
const redisPrefixOf = (env: DistributedEnv): string => `gm:${env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}:` : ''}`;

export function openState(env: RedisEnv, nowMs: () => number = Date.now): StateStore {
  return new StateStore(createRedisKeyValueStore(redisTargetOf(env)), redisPrefixOf(env), nowMs);
}

/** Consumer groups' commits told across the deployment's processes over its Redis (design §9). */
export function openCommitNotices(env: RedisEnv): CommitNotices {
  return createRedisCommitNotices({ ...redisTargetOf(env), channelPrefix: redisPrefixOf(env) });
}

/** The parsed WithElasticsearch (a list of node URLs), or one node's URL from a caller that builds its env by hand. */
type ElasticsearchEnv = { ELASTICSEARCH_URL: string | readonly string[] };

/** The names of a deployment's Elasticsearch indices start with this (its namespace's, or `gm`). */
const indexPrefixOf = (env: DistributedEnv): string => (env.MEMORY_NAMESPACE ? `gm-${env.MEMORY_NAMESPACE}` : 'gm');

export function openIndex(env: DistributedEnv & ElasticsearchEnv, options: { refresh?: true | 'wait_for' } = {}): SearchIndex {
  return createElasticsearchSearchIndex({ node: env.ELASTICSEARCH_URL, indexPrefix: indexPrefixOf(env), ...options });
}

/** The summary store beside the search index: `<prefix>-summaries` under the same prefix. */
export function openSummaries(env: DistributedEnv & ElasticsearchEnv, options: { refresh?: true | 'wait_for' } = {}): SummaryStore {
  return createElasticsearchSummaryStore({ node: env.ELASTICSEARCH_URL, indexPrefix: indexPrefixOf(env), ...options });
}

/** The vector index beside the search index: `<prefix>-vectors` under the same prefix, `dimensions` fixed by its mapping. */
export function openVectors(env: DistributedEnv & ElasticsearchEnv, dimensions: number, options: { refresh?: boolean } = {}): VectorIndex {
  return createElasticsearchVectorIndex({ node: env.ELASTICSEARCH_URL, indexPrefix: indexPrefixOf(env), dimensions, ...options });
}

export interface SealedBus {
  /** The service's view: content sealed on the way in, opened (or redacted) on the way out. */
  bus: Bus;
  /** The log as stored (offsets, the transit-key sweeper). */
  raw: Bus;
  /** The key store and keyring, for a service that holds keys (`open`, `edge`). */
  keys?: { keyring: Keyring; store: KeyStore };
  /** Set when opening re-wrapped KEKs under the active master key. */
  rotation?: RotationResult;
  close(): Promise<void>;
}

/**
 * Opens the bus as a service of `role` sees it (content-crypto.ts): `redact` holds no key;
 * `edge` (the API) and `open` hold the master keys and the key store on memory.keys (the edge
 * for its transit keys). A missing, malformed or wrong master key throws CryptoError before
 * anything reads the log (runService exits 2 naming it). `rotate`: re-wrap keys of older master
 * keys (write-admission). `clientId` also names the instance's transit keys.
 */
export async function openSealedBus(
  env: RedisEnv & z.infer<typeof WithMasterKeys>, clientId: string, role: ContentRole, options: { rotate?: boolean; onError?: (err: unknown) => void } = {},
): Promise<SealedBus> {
  const masterKeys = role === 'redact'
    ? undefined
    : loadMasterKeys({ MEMORY_MASTER_KEY_FILE: env.MEMORY_MASTER_KEY_FILE, MEMORY_MASTER_KEY: env.MEMORY_MASTER_KEY });
  const notices = openCommitNotices(env);
  let raw: Bus;
  try {
    raw = await openBus(env, clientId, notices);
  } catch (err) {
    await notices.close();
    throw err;
  }
  const closeBus = async (): Promise<void> => {
    await raw.close();
    await notices.close();
  };
  if (masterKeys === undefined) return { bus: redactedBus(raw), raw, close: closeBus };
  let store: KeyStore | undefined;
  try {
    store = await openBusKeyStore({ bus: raw, partitions: env.MEMORY_PARTITIONS, ...(options.onError ? { onError: options.onError } : {}) });
    const crypto = await openContentCrypto({ masterKeys, store, rotate: options.rotate === true, instanceId: clientId });
    // The edge creates this hour's transit key now rather than on the first write it seals.
    if (role === 'edge') await crypto.keyring.transitKey(transitKeyId(clientId, Date.now()), true);
    const opened = store;
    return {
      bus: crypto.view(raw, role),
      raw,
      keys: { keyring: crypto.keyring, store: opened },
      ...(crypto.rotation ? { rotation: crypto.rotation } : {}),
      close: async () => {
        crypto.close();
        await opened.close();
        await closeBus();
      },
    };
  } catch (err) {
    await store?.close();
    await closeBus();
    throw err;
  }
}
