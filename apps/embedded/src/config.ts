import path from 'node:path';
import { z } from 'zod';
import type { TtlPolicy } from '@gm/domain';
import { LogLevel, duration, integer, parseDuration, ttlPolicyOf, ttlShape } from '@gm/service-kit';

export { parseDuration };

export const EnvSchema = z.object({
  MEMORY_HOST: z.string().min(1).default('127.0.0.1'),
  MEMORY_PORT: integer(8080, 0, 65535),
  MEMORY_DATA_DIR: z.string().min(1).default('.data'),
  MEMORY_ISSUER_CREDENTIAL: z.string().min(32, 'must be at least 32 characters').optional(),
  MEMORY_ISSUER_NAME: z.string().min(1).default('governed-memory'),
  MEMORY_LOG_LEVEL: LogLevel.default('info'),
  MEMORY_PARTITIONS: integer(4, 1, 256),
  MEMORY_RATE_LIMIT_PER_MINUTE: integer(1200, 1, 1_000_000),
  MEMORY_BODY_LIMIT_BYTES: integer(256 * 1024, 1024, 16 * 1024 * 1024),
  MEMORY_REQUEST_TIMEOUT: duration('30s', true),
  MEMORY_REPLY_TIMEOUT: duration('10s', true),
  MEMORY_READ_YOUR_WRITES_TIMEOUT: duration('5s', true),
  MEMORY_PACKET_TTL: duration('15m'),
  MEMORY_CACHE_TTL: duration('60s'),
  MEMORY_IDEMPOTENCY_WINDOW: duration('24h'),
  MEMORY_EXPIRY_TICK: duration('1s', true),
  MEMORY_DELETION_DEADLINE: duration('60s'),
  MEMORY_DELETION_VERIFY_RETRY: duration('500ms', true),
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
  idempotencyWindowMs: number;
  expiryTickMs: number;
  deletionDeadlineMs: number;
  deletionVerifyRetryMs: number;
  ttl: TtlPolicy;
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
    host: e.MEMORY_HOST,
    port: e.MEMORY_PORT,
    dataDir: path.resolve(e.MEMORY_DATA_DIR),
    ...(e.MEMORY_ISSUER_CREDENTIAL === undefined ? {} : { issuerCredential: e.MEMORY_ISSUER_CREDENTIAL }),
    issuerName: e.MEMORY_ISSUER_NAME,
    logLevel: e.MEMORY_LOG_LEVEL,
    partitions: e.MEMORY_PARTITIONS,
    rateLimitPerMinute: e.MEMORY_RATE_LIMIT_PER_MINUTE,
    bodyLimitBytes: e.MEMORY_BODY_LIMIT_BYTES,
    requestTimeoutMs: e.MEMORY_REQUEST_TIMEOUT,
    replyTimeoutMs: e.MEMORY_REPLY_TIMEOUT,
    readYourWritesTimeoutMs: e.MEMORY_READ_YOUR_WRITES_TIMEOUT,
    packetTtlMs: e.MEMORY_PACKET_TTL,
    cacheTtlMs: e.MEMORY_CACHE_TTL,
    idempotencyWindowMs: e.MEMORY_IDEMPOTENCY_WINDOW,
    expiryTickMs: e.MEMORY_EXPIRY_TICK,
    deletionDeadlineMs: e.MEMORY_DELETION_DEADLINE,
    deletionVerifyRetryMs: e.MEMORY_DELETION_VERIFY_RETRY,
    ttl,
  };
}
