import path from 'node:path';
import { z } from 'zod';
import type { TtlPolicy } from '@gm/domain';
import { DEFAULT_MODEL_DIR } from '@gm/embedding';
import {
  LogLevel, admissionEnvShape, admissionSettingsOf, brokerEnvShape, brokerSettingsOf, duration, integer, parseDuration, ttlPolicyOf, ttlShape,
} from '@gm/service-kit';

export { parseDuration };

export const EnvSchema = z.object({
  ...brokerEnvShape,
  ...admissionEnvShape,
  MEMORY_DATA_DIR: z.string().min(1).default('.data'),
  MEMORY_ISSUER_CREDENTIAL: z.string().min(32, 'must be at least 32 characters').optional(),
  MEMORY_LOG_LEVEL: LogLevel.default('info'),
  MEMORY_PARTITIONS: integer(4, 1, 256),
  MEMORY_IDEMPOTENCY_WINDOW: duration('24h'),
  MEMORY_EXPIRY_TICK: duration('1s', true),
  MEMORY_DELETION_DEADLINE: duration('60s'),
  MEMORY_DELETION_VERIFY_RETRY: duration('500ms', true),
  /** Master keys for content encryption (issue 7); neither set = generated into the data directory. */
  MEMORY_MASTER_KEY_FILE: z.string().min(1).optional(),
  MEMORY_MASTER_KEY: z.string().min(1).optional(),
  /** Where the consumer services run: a worker thread of their own, or the HTTP server's thread. */
  MEMORY_PIPELINE: z.enum(['thread', 'inline']).default('thread'),
  /** Semantic retrieval (issue 14): a vector per active record, embedded by the local model; off = lexical only. */
  MEMORY_SEMANTIC: z.enum(['on', 'off']).default('on'),
  /** The embedding model's directory (the .onnx file and its tokenizer.json); default: where setup fetches it. */
  MEMORY_EMBEDDING_MODEL_DIR: z.string().min(1).optional(),
  ...ttlShape,
});

export interface RuntimeConfig {
  host: string;
  port: number;
  dataDir: string;
  issuerCredential?: string;
  issuerName: string;
  logLevel: string;
  partitions: number;
  rateLimitPerMinute: number;
  bodyLimitBytes: number;
  requestTimeoutMs: number;
  replyTimeoutMs: number;
  readYourWritesTimeoutMs: number;
  packetTtlMs: number;
  cacheTtlMs: number;
  asyncBacklogLimit: number;
  /** MEMORY_QUERY_AUDIT: a log line per index and kNN query (retrieval-broker's query-audit.ts). */
  queryAudit: boolean;
  policyDir?: string;
  idempotencyWindowMs: number;
  admission: { snapshotIntervalMs: number; maxEntries: number };
  expiryTickMs: number;
  deletionDeadlineMs: number;
  deletionVerifyRetryMs: number;
  ttl: TtlPolicy;
  masterKeyFile?: string;
  masterKey?: string;
  pipeline: 'thread' | 'inline';
  /** Where the embedding model is, when semantic retrieval is on; absent = lexical only. */
  semantic?: { modelDir: string };
}

export class ConfigError extends Error {}

/** Parses the environment; every problem is reported at once, naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): RuntimeConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const ttl = ttlPolicyOf(e);
  return {
    ...brokerSettingsOf(e),
    dataDir: path.resolve(e.MEMORY_DATA_DIR),
    ...(e.MEMORY_ISSUER_CREDENTIAL === undefined ? {} : { issuerCredential: e.MEMORY_ISSUER_CREDENTIAL }),
    logLevel: e.MEMORY_LOG_LEVEL,
    partitions: e.MEMORY_PARTITIONS,
    idempotencyWindowMs: e.MEMORY_IDEMPOTENCY_WINDOW,
    admission: admissionSettingsOf(e),
    expiryTickMs: e.MEMORY_EXPIRY_TICK,
    deletionDeadlineMs: e.MEMORY_DELETION_DEADLINE,
    deletionVerifyRetryMs: e.MEMORY_DELETION_VERIFY_RETRY,
    ttl,
    ...(e.MEMORY_MASTER_KEY_FILE === undefined ? {} : { masterKeyFile: e.MEMORY_MASTER_KEY_FILE }),
    ...(e.MEMORY_MASTER_KEY === undefined ? {} : { masterKey: e.MEMORY_MASTER_KEY }),
    pipeline: e.MEMORY_PIPELINE,
    ...(e.MEMORY_SEMANTIC === 'on' ? { semantic: { modelDir: path.resolve(e.MEMORY_EMBEDDING_MODEL_DIR ?? DEFAULT_MODEL_DIR) } } : {}),
  };
}
