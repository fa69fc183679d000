import { hostname } from 'node:os';
import { createKafkaBus, memoryTopicSpecs, type Bus } from '@gm/bus';
import {
  createElasticsearchSearchIndex, createElasticsearchSummaryStore, createElasticsearchVectorIndex, type SearchIndex, type SummaryStore, type VectorIndex,
} from '@gm/search-index';
import { StateStore, createRedisKeyValueStore } from '@gm/state-store';
import { z } from 'zod';
import type { Clock } from '@gm/contracts';
import {
  loadMasterKeys, openBusKeyStore, openContentCrypto, redactedBus, transitKeyId,
  type ContentRole, type KeyStore, type Keyring, type RotationResult,
} from '@gm/crypto';
import { integer, logEnvShape } from './env.ts';

/**
 * Environment every distributed service reads (design §11 names the engine variables). Each
 * service composes its own schema in `services/<name>/src/env.ts`; `pnpm docs:config` renders
 * which service reads which variable into docs/distributed.md.
 */
export const DistributedEnv = z.object({
  KAFKA_BROKERS: z
    .string()
    .min(1, 'comma-separated host:port list')
    .transform((v) => v.split(',').map((b) => b.trim()).filter(Boolean))
    .meta({ description: 'comma-separated `host:port`' }),
  // Every service refuses topics of another count (PartitionCountMismatchError).
  MEMORY_PARTITIONS: integer(12, 1, 256).meta({
    description: 'partitions per topic (commands and events co-partitioned). Fixed per deployment: a service started with another count than the topics have exits 2, naming the topic and both counts',
  }),
  ...logEnvShape,
  HEALTH_PORT: integer(0, 0, 65535).meta({ description: 'health/metrics port (0 = any)' }),
  MEMORY_NAMESPACE: z.string().regex(/^[a-z0-9-]*$/, 'lower-case letters, digits and -').default('')
    .meta({ description: 'isolates topics, keys and indices of one deployment on shared engines' }),
});
export type DistributedEnv = z.infer<typeof DistributedEnv>;

export const WithRedis = z.object({
  REDIS_URL: z.string().url().meta({ description: '`redis://host:port` (the state store; write-admission keeps its subject state snapshots there)' }),
});
export const WithElasticsearch = z.object({
  ELASTICSEARCH_URL: z.string().url().meta({ description: '`http://host:port` (client major 9 = server major)' }),
});

/** The capability signing key pair, read by the edges that verify capabilities (the broker also signs them). */
export const WithSigningKey = z.object({
  MEMORY_SIGNING_KEY_FILE: z.string().min(1).meta({
    description: 'the capability signing key pair (JSON `{privateJwk, publicJwk}`, Ed25519); the ingest-gateway uses only its public half (`node --import tsx apps/distributed/src/generate-credentials.ts DIR` creates it)',
  }),
});

/** Names one instance of a service that runs several (the edges): its transit keys, and the broker's reply group. */
export const WithInstanceId = z.object({
  MEMORY_INSTANCE_ID: z.string().regex(/^[A-Za-z0-9._-]+$/).default(`${hostname()}-${process.pid}`).meta({
    description: "names this instance's transit keys (and the broker's reply consumer group); unique per running instance",
    // The schema's default is this process's own value: the docs show how it is made.
    whenUnset: '`<hostname>-<pid>`',
  }),
});

export async function openBus(env: DistributedEnv, clientId: string): Promise<Bus> {
  const bus = createKafkaBus({
    brokers: env.KAFKA_BROKERS,
    clientId,
    topicPrefix: env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}.` : '',
    transactionalIdPrefix: env.MEMORY_NAMESPACE ? `gm.${env.MEMORY_NAMESPACE}` : 'gm',
  });
  await bus.ensureTopics(memoryTopicSpecs(env.MEMORY_PARTITIONS));
  return bus;
}

export function openState(env: DistributedEnv & z.infer<typeof WithRedis>, nowMs: () => number = Date.now): StateStore {
  const kv = createRedisKeyValueStore({ url: env.REDIS_URL });
  return new StateStore(kv, `gm:${env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}:` : ''}`, nowMs);
}

/** The names of a deployment's Elasticsearch indices start with this (its namespace's, or `gm`). */
const indexPrefixOf = (env: DistributedEnv): string => (env.MEMORY_NAMESPACE ? `gm-${env.MEMORY_NAMESPACE}` : 'gm');

export function openIndex(env: DistributedEnv & z.infer<typeof WithElasticsearch>): SearchIndex {
  return createElasticsearchSearchIndex({ node: env.ELASTICSEARCH_URL, indexPrefix: indexPrefixOf(env) });
}

/** The summary store beside the search index: `<prefix>-summaries` under the same prefix. */
export function openSummaries(env: DistributedEnv & z.infer<typeof WithElasticsearch>): SummaryStore {
  return createElasticsearchSummaryStore({ node: env.ELASTICSEARCH_URL, indexPrefix: indexPrefixOf(env) });
}

/**
 * Semantic retrieval (issue 14), read by every process that touches vectors: the vector-indexer,
 * the retrieval-broker (query embeddings, kNN), the receipt-verifier (kNN probes) and the
 * deletion-orchestrator (whether `vector` is a deletion target). One value for the whole stack:
 * a broker that searched vectors nobody keeps, or an orchestrator that waited on a `vector`
 * target nobody serves, would fail every search or every deletion.
 */
export const WithSemantic = z.object({
  MEMORY_SEMANTIC: z.enum(['on', 'off']).default('on').meta({
    description: '`on` or `off`, one value for the whole stack: with `on` the vector-indexer keeps a vector per active record in Elasticsearch (`<prefix>-vectors`), the broker searches hybrid by default, the verifier probes the vectors by kNN and `vector` is a deletion target; the stack launcher starts no vector-indexer with `off` (and the vector-indexer refuses to start)',
  }),
  // The .onnx file and its tokenizer.json; the services resolve an unset one to @gm/embedding's DEFAULT_MODEL_DIR.
  MEMORY_EMBEDDING_MODEL_DIR: z.string().min(1).optional().meta({
    description: "the model's directory; a missing model stops the process at start",
    whenUnset: 'where `scripts/setup.sh` fetched it',
  }),
});

/** The vector index beside the search index: `<prefix>-vectors` under the same prefix, `dimensions` fixed by its mapping. */
export function openVectors(env: DistributedEnv & z.infer<typeof WithElasticsearch>, dimensions: number): VectorIndex {
  return createElasticsearchVectorIndex({ node: env.ELASTICSEARCH_URL, indexPrefix: indexPrefixOf(env), dimensions });
}

/** Master keys of content encryption (issue 7): exactly one of the two (see @gm/crypto loadMasterKeys). */
export const WithMasterKeys = z.object({
  MEMORY_MASTER_KEY_FILE: z.string().min(1).optional().meta({
    description: 'the master keys (see [encryption.md](encryption.md); `generate-credentials.ts` writes `DIR/keys/master-keys.json`); the orchestrator and the expiry-scheduler hold no key',
    // loadMasterKeys refuses to start without one of the two: there is no default key.
    whenUnset: 'required unless `MEMORY_MASTER_KEY` is set',
  }),
  MEMORY_MASTER_KEY: z.string().min(1).optional()
    .meta({ description: 'one base64 master key (id `env`) instead of the file; set one of the two, not both' }),
});

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
  env: DistributedEnv & z.infer<typeof WithMasterKeys>, clientId: string, role: ContentRole, options: { rotate?: boolean; onError?: (err: unknown) => void } = {},
): Promise<SealedBus> {
  const masterKeys = role === 'redact'
    ? undefined
    : loadMasterKeys({ MEMORY_MASTER_KEY_FILE: env.MEMORY_MASTER_KEY_FILE, MEMORY_MASTER_KEY: env.MEMORY_MASTER_KEY });
  const raw = await openBus(env, clientId);
  if (masterKeys === undefined) return { bus: redactedBus(raw), raw, close: () => raw.close() };
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
        await raw.close();
      },
    };
  } catch (err) {
    await store?.close();
    await raw.close();
    throw err;
  }
}
