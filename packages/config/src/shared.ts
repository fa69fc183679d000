import { hostname } from 'node:os';
import { z } from 'zod';
import { integer, logEnvShape } from './primitives.ts';

/**
 * Environment every distributed service reads (design §11 names the engine variables). Each
 * service composes its own schema beside its main.ts (`services/<name>/src/env.ts`) from this
 * base and the `With…` parts below; `pnpm docs:config` renders which service reads which
 * variable into docs/distributed.md.
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
  // Loopback unless asked: a container's probes and Prometheus reach the pod's address, a laptop's launcher does not need to.
  HEALTH_HOST: z.string().regex(/^[A-Za-z0-9.:-]{1,253}$/, 'an IP address or a host name').default('127.0.0.1').meta({
    description: 'address the `/healthz`, `/readyz` and `/metrics` server listens on (`0.0.0.0` in containers, where probes and Prometheus reach the pod\'s address)',
  }),
  MEMORY_NAMESPACE: z.string().regex(/^[a-z0-9-]*$/, 'lower-case letters, digits and -').default('')
    .meta({ description: 'isolates topics, keys and indices of one deployment on shared engines' }),
  MEMORY_KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(16).optional().meta({
    description: 'replication factor of the topics a service creates (unset: the broker default); production deployments use 3',
  }),
  MEMORY_KAFKA_MIN_INSYNC_REPLICAS: z.coerce.number().int().min(1).max(16).optional().meta({
    description: '`min.insync.replicas` of the topics a service creates (unset: the broker default; with a replication factor set: one less than it, at least 1)',
  }),
  MEMORY_PRODUCTION: z.enum(['true', 'false']).default('false').transform((v) => v === 'true').meta({
    description: 'refuse to start (exit 2, naming each topic) when a topic is replicated below `MEMORY_KAFKA_REPLICATION_FACTOR` (3 when unset) or its `min.insync.replicas`, or when `memory.events` / `policy.changes` do not keep every record',
  }),
});
export type DistributedEnv = z.infer<typeof DistributedEnv>;

/** `host:port`, comma-separated, each checked: a typo stops the start instead of a client retrying forever. */
const hostPortList = z.string().transform((text, ctx) => {
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length === 0) ctx.addIssue({ code: 'custom', message: 'names no `host:port`' });
  const parsed: { host: string; port: number }[] = [];
  for (const entry of entries) {
    const match = /^([^\s:]+):(\d{1,5})$/.exec(entry);
    const port = Number(match?.[2]);
    if (!match?.[1] || port < 1 || port > 65535) ctx.addIssue({ code: 'custom', message: `not a host:port: ${entry}` });
    else parsed.push({ host: match[1], port });
  }
  return parsed;
});

export const WithRedis = z.object({
  REDIS_URL: z.string().url().optional().meta({
    description: '`redis://host:port` of one Redis (the state store; write-admission keeps its subject state snapshots there); set it or `REDIS_SENTINELS`, not both',
    whenUnset: 'required unless `REDIS_SENTINELS` is set',
  }),
  REDIS_SENTINELS: hostPortList.optional().meta({
    description: 'comma-separated `host:port` of Redis Sentinels: the state store asks them for the current primary and follows a failover (with `REDIS_SENTINEL_NAME`, instead of `REDIS_URL`)',
  }),
  REDIS_SENTINEL_NAME: z.string().regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ -').optional().meta({
    description: 'the master name the Sentinels watch (`sentinel monitor <name> …`); required with `REDIS_SENTINELS`',
  }),
});
export type WithRedis = z.infer<typeof WithRedis>;

/** Where the state store's Redis is: one server, or the primary the Sentinels name. */
export type RedisConnection =
  | { kind: 'url'; url: string }
  | { kind: 'sentinel'; sentinels: { host: string; port: number }[]; name: string };

/** One configuration problem, naming the variable to fix. */
export interface EnvProblem {
  variable: string;
  message: string;
}

/** What is wrong with the Redis variables as a whole (each alone has parsed): none, or one per variable to fix. */
export function redisEnvProblems(env: WithRedis): EnvProblem[] {
  const sentinels = env.REDIS_SENTINELS !== undefined;
  if (env.REDIS_URL !== undefined && sentinels) {
    return [{ variable: 'REDIS_URL', message: 'set either REDIS_URL (one Redis) or REDIS_SENTINELS (Sentinel failover), not both' }];
  }
  if (env.REDIS_URL === undefined && !sentinels) {
    return [{ variable: 'REDIS_URL', message: 'required: the state store\'s `redis://host:port`, or REDIS_SENTINELS with REDIS_SENTINEL_NAME' }];
  }
  if (sentinels && env.REDIS_SENTINEL_NAME === undefined) {
    return [{ variable: 'REDIS_SENTINEL_NAME', message: 'required with REDIS_SENTINELS: the master name the Sentinels watch' }];
  }
  if (!sentinels && env.REDIS_SENTINEL_NAME !== undefined) {
    return [{ variable: 'REDIS_SENTINEL_NAME', message: 'only read with REDIS_SENTINELS: set REDIS_SENTINELS too, or unset it' }];
  }
  return [];
}

/** A configuration that parsed variable by variable but not as a whole; services exit 2 with it. */
export class EnvConfigError extends Error {
  constructor(readonly problems: readonly EnvProblem[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`);
    this.name = 'EnvConfigError';
  }
}

/** The Redis to open; throws EnvConfigError naming the variable when the combination is wrong. */
export function redisConnectionOf(env: WithRedis): RedisConnection {
  const problems = redisEnvProblems(env);
  if (problems.length > 0) throw new EnvConfigError(problems);
  if (env.REDIS_SENTINELS !== undefined && env.REDIS_SENTINEL_NAME !== undefined) {
    return { kind: 'sentinel', sentinels: env.REDIS_SENTINELS, name: env.REDIS_SENTINEL_NAME };
  }
  if (env.REDIS_URL !== undefined) return { kind: 'url', url: env.REDIS_URL };
  // redisEnvProblems admits no other combination.
  throw new EnvConfigError([{ variable: 'REDIS_URL', message: 'required' }]);
}

export const WithElasticsearch = z.object({
  ELASTICSEARCH_URL: z.string()
    .transform((text, ctx) => {
      const urls = text.split(',').map((u) => u.trim()).filter((u) => u !== '');
      if (urls.length === 0) ctx.addIssue({ code: 'custom', message: 'names no node URL' });
      for (const url of urls) if (!z.url({ protocol: /^https?$/ }).safeParse(url).success) ctx.addIssue({ code: 'custom', message: `not an http(s) URL: ${url}` });
      return urls;
    })
    .meta({ description: '`http://host:port` of a node, or a comma-separated list of the nodes of one cluster (the client spreads requests over them and retries a failed one on another); client major 9 = server major' }),
});
export type WithElasticsearch = z.infer<typeof WithElasticsearch>;

/** The capability signing key pair, read by the edges that verify capabilities (the broker also signs them). */
export const WithSigningKey = z.object({
  MEMORY_SIGNING_KEY_FILE: z.string().min(1).meta({
    description: 'the capability signing key pair (JSON `{privateJwk, publicJwk}`, Ed25519); the ingest-gateway uses only its public half (`node --import tsx apps/distributed/src/generate-credentials.ts DIR` creates it)',
  }),
});

/**
 * The capabilities' issuer and the Cedar policy set: read by the broker, by the ingest-gateway
 * (it verifies capabilities and decides writes) and by the receipt-verifier (its replayed reads
 * are decided by the broker's policy set).
 */
export const WithPolicy = z.object({
  MEMORY_ISSUER_NAME: z.string().min(1).default('governed-memory').meta({ description: '`iss` of capabilities' }),
  MEMORY_POLICY_DIR: z.string().min(1).optional().meta({
    description: 'a directory with `schema.cedarschema` and `default.cedar` replacing `packages/policy/policies/`',
    whenUnset: 'shipped set',
  }),
});

/** Names one instance of a service that runs several (the edges): its transit keys, and the broker's reply group. */
/**
 * The per-principal rate limit of both write edges (design §9.3): the HTTP API counts it per broker
 * instance, the ingest-gateway in Redis across its instances (docs/ingest.md#rate-limit).
 */
export const WithRateLimit = z.object({
  MEMORY_RATE_LIMIT_PER_MINUTE: integer(1200, 1, 1_000_000).meta({
    description: 'requests per minute per verified principal (per capability subject): on the HTTP API per broker instance, on `memory.ingest` shared by every ingest-gateway instance through Redis; over it the API answers 429 and the gateway a retriable `MEM_RATE_LIMITED` result',
  }),
});

export const WithInstanceId = z.object({
  MEMORY_INSTANCE_ID: z.string().regex(/^[A-Za-z0-9._-]+$/).default(`${hostname()}-${process.pid}`).meta({
    description: "names this instance's transit keys (and the broker's reply consumer group); unique per running instance",
    // The schema's default is this process's own value: the docs show how it is made.
    whenUnset: '`<hostname>-<pid>`',
  }),
});

/**
 * Semantic retrieval (docs/embedding.md), read by every process that touches vectors: the
 * vector-indexer, the retrieval-broker (query embeddings, kNN), the receipt-verifier (kNN probes),
 * the deletion-orchestrator (whether `vector` is a deletion target) and the ingest-gateway (which
 * model a request's own embedding must come from). One value for the whole
 * stack: a broker that searched vectors nobody keeps, or an orchestrator that waited on a
 * `vector` target nobody serves, would fail every search or every deletion.
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

/** Master keys of content encryption (docs/encryption.md): exactly one of the two (see @gm/crypto loadMasterKeys). */
export const WithMasterKeys = z.object({
  MEMORY_MASTER_KEY_FILE: z.string().min(1).optional().meta({
    description: 'the master keys (see [encryption.md](encryption.md); `generate-credentials.ts` writes `DIR/keys/master-keys.json`); the orchestrator and the expiry-scheduler hold no key',
    // loadMasterKeys refuses to start without one of the two: there is no default key.
    whenUnset: 'required unless `MEMORY_MASTER_KEY` is set',
  }),
  MEMORY_MASTER_KEY: z.string().min(1).optional()
    .meta({ description: 'one base64 master key (id `env`) instead of the file; set one of the two, not both' }),
});
