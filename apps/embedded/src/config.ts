import path from 'node:path';
import { z } from 'zod';
import type { MemoryKind } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, type TtlPolicy } from '@gm/domain';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "250ms", "30s", "15m", "24h", "90d" → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match?.[1] || !match[2]) throw new Error(`"${text}" is not a duration like 30s, 15m, 24h or 90d`);
  return Number(match[1]) * (UNITS[match[2]] ?? 1);
}

const duration = (fallback: string, timer = false) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      try {
        const ms = parseDuration(v);
        // Node timers fire at once past 2^31-1 ms; a zero interval would spin a loop.
        if (ms < 1 || (timer && ms > 2_147_483_647)) throw new Error(`"${v}" must be between 1ms and ${timer ? '24d' : 'any length'}`);
        return ms;
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });

/** Digits only: an empty MEMORY_PORT= must be an error, not port 0 (Number('') === 0). */
const integer = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .default(String(fallback))
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const KINDS: MemoryKind[] = ['working_note', 'fact', 'skill', 'preference'];
const ttlVar = (kind: MemoryKind) => `MEMORY_TTL_${kind.toUpperCase()}`;
const fmt = (s: number) => `${Math.round(s / 86400)}d`;

/** "default,max" per kind, e.g. MEMORY_TTL_FACT=90d,365d. */
const ttlShape = Object.fromEntries(
  KINDS.map((kind) => [
    ttlVar(kind),
    z
      .string()
      .default(`${fmt(DEFAULT_TTL_POLICY[kind].defaultSeconds)},${fmt(DEFAULT_TTL_POLICY[kind].maxSeconds)}`)
      .transform((v, ctx) => {
        const [d, m, extra] = v.split(',');
        try {
          if (!d || !m || extra !== undefined) throw new Error('expected "default,max", e.g. 90d,365d');
          const defaultSeconds = parseDuration(d) / 1000;
          const maxSeconds = parseDuration(m) / 1000;
          if (defaultSeconds <= 0 || defaultSeconds > maxSeconds) throw new Error('need 0 < default <= max');
          return { defaultSeconds, maxSeconds };
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
          return z.NEVER;
        }
      }),
  ]),
);

export const EnvSchema = z.object({
  MEMORY_HOST: z.string().min(1).default('127.0.0.1'),
  MEMORY_PORT: integer(8080, 0, 65535),
  MEMORY_DATA_DIR: z.string().min(1).default('.data'),
  MEMORY_ISSUER_CREDENTIAL: z.string().min(32, 'must be at least 32 characters').optional(),
  MEMORY_ISSUER_NAME: z.string().min(1).default('governed-memory'),
  MEMORY_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
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
  const e = parsed.data as z.infer<typeof EnvSchema> & Record<string, { defaultSeconds: number; maxSeconds: number }>;
  const ttl = Object.fromEntries(KINDS.map((k) => [k, e[ttlVar(k)]])) as TtlPolicy;
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
