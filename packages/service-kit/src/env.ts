import { z } from 'zod';
import type { MemoryKind } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, type TtlPolicy } from '@gm/domain';

/** Environment parsing shared by the embedded runtime and every distributed service. */
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "250ms", "30s", "15m", "24h", "90d" → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match?.[1] || !match[2]) throw new Error(`"${text}" is not a duration like 30s, 15m, 24h or 90d`);
  return Number(match[1]) * (UNITS[match[2]] ?? 1);
}

export const duration = (fallback: string, timer = false) =>
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
export const integer = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .default(String(fallback))
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const KINDS: MemoryKind[] = ['working_note', 'fact', 'skill', 'preference'];
export const ttlVar = (kind: MemoryKind) => `MEMORY_TTL_${kind.toUpperCase()}`;
const fmt = (s: number) => `${Math.round(s / 86400)}d`;

/** "default,max" per kind, e.g. MEMORY_TTL_FACT=90d,365d. */
export const ttlShape = Object.fromEntries(
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


/** The TTL policy out of parsed MEMORY_TTL_* variables. */
export function ttlPolicyOf(env: Record<string, unknown>): TtlPolicy {
  return Object.fromEntries(KINDS.map((k) => [k, env[ttlVar(k)]])) as TtlPolicy;
}

export const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** Settings of the HTTP API, read the same way by the embedded runtime and the broker process. */
export const brokerEnvShape = {
  MEMORY_HOST: z.string().min(1).default('127.0.0.1'),
  MEMORY_PORT: integer(8080, 0, 65535),
  MEMORY_ISSUER_NAME: z.string().min(1).default('governed-memory'),
  MEMORY_RATE_LIMIT_PER_MINUTE: integer(1200, 1, 1_000_000),
  MEMORY_BODY_LIMIT_BYTES: integer(256 * 1024, 1024, 16 * 1024 * 1024),
  MEMORY_REQUEST_TIMEOUT: duration('30s', true),
  MEMORY_REPLY_TIMEOUT: duration('10s', true),
  MEMORY_READ_YOUR_WRITES_TIMEOUT: duration('5s', true),
  MEMORY_PACKET_TTL: duration('15m'),
  MEMORY_CACHE_TTL: duration('60s'),
  /** Asynchronous writes are refused (503, retriable) while the pipeline is this many messages behind. */
  MEMORY_ASYNC_BACKLOG: integer(1_000, 1, 10_000_000),
  /** A directory with schema.cedarschema and default.cedar replacing the shipped policy set. */
  MEMORY_POLICY_DIR: z.string().min(1).optional(),
  /** One log line per index and kNN query: request, principal, purpose, partitions (no text); see docs/api.md, "Query audit". */
  MEMORY_QUERY_AUDIT: z.enum(['on', 'off']).default('off'),
};
const BrokerEnv = z.object(brokerEnvShape);

export function brokerSettingsOf(e: z.infer<typeof BrokerEnv>) {
  return {
    host: e.MEMORY_HOST,
    port: e.MEMORY_PORT,
    issuerName: e.MEMORY_ISSUER_NAME,
    rateLimitPerMinute: e.MEMORY_RATE_LIMIT_PER_MINUTE,
    bodyLimitBytes: e.MEMORY_BODY_LIMIT_BYTES,
    requestTimeoutMs: e.MEMORY_REQUEST_TIMEOUT,
    replyTimeoutMs: e.MEMORY_REPLY_TIMEOUT,
    readYourWritesTimeoutMs: e.MEMORY_READ_YOUR_WRITES_TIMEOUT,
    packetTtlMs: e.MEMORY_PACKET_TTL,
    cacheTtlMs: e.MEMORY_CACHE_TTL,
    asyncBacklogLimit: e.MEMORY_ASYNC_BACKLOG,
    queryAudit: e.MEMORY_QUERY_AUDIT === 'on',
    ...(e.MEMORY_POLICY_DIR === undefined ? {} : { policyDir: e.MEMORY_POLICY_DIR }),
  };
}

/** write-admission's snapshots and memory bound, read the same way by the embedded runtime and the service. */
export const admissionEnvShape = {
  /** How often changed subject states and checkpoints are stored: a restart folds at most this much of the log. */
  MEMORY_ADMISSION_SNAPSHOT_INTERVAL: duration('5s', true),
  /** About how many records and idempotency slots write-admission keeps in memory; the rest load on demand. */
  MEMORY_ADMISSION_MEMORY_ENTRIES: integer(500_000, 1_000, 1_000_000_000),
};
const AdmissionEnv = z.object(admissionEnvShape);

export function admissionSettingsOf(e: z.infer<typeof AdmissionEnv>) {
  return { snapshotIntervalMs: e.MEMORY_ADMISSION_SNAPSHOT_INTERVAL, maxEntries: e.MEMORY_ADMISSION_MEMORY_ENTRIES };
}
