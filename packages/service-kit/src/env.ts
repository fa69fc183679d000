import { z } from 'zod';
import { Id, LIMITS, PrincipalKind, Purpose, ResourceRef, type MemoryKind } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, type TtlPolicy } from '@gm/domain';

/**
 * Environment parsing shared by the embedded runtime and every distributed service. Each
 * variable carries its documentation in `.meta()` (see env-reference.ts); `pnpm docs:config`
 * renders the tables of docs/configuration.md and docs/distributed.md from it.
 */
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
const KIND_PLURALS: Record<MemoryKind, string> = { working_note: 'working notes', fact: 'facts', skill: 'skills', preference: 'preferences' };
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
      })
      .meta({ description: `default,max lifetime of ${KIND_PLURALS[kind]}` }),
  ]),
);

/** The TTL policy out of parsed MEMORY_TTL_* variables. */
export function ttlPolicyOf(env: Record<string, unknown>): TtlPolicy {
  return Object.fromEntries(KINDS.map((k) => [k, env[ttlVar(k)]])) as TtlPolicy;
}

export const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** The log level, read the same way by the embedded runtime and every service. */
export const logEnvShape = {
  MEMORY_LOG_LEVEL: LogLevel.default('info').meta({ description: 'pino level (`silent` … `trace`)' }),
};

/** Settings of the HTTP API, read the same way by the embedded runtime and the broker process. */
/** One administrator of MEMORY_BOOTSTRAP_ADMINS. */
export const BootstrapAdmin = z.object({
  tenant: Id, principal: z.object({ id: Id, kind: PrincipalKind }).strict(), resource: ResourceRef, purposes: z.array(Purpose).min(1).max(32),
}).strict();
export type BootstrapAdmin = z.infer<typeof BootstrapAdmin>;

/** MEMORY_BOOTSTRAP_ADMINS: JSON text, parsed and checked here, so a typo stops the start (exit 2) instead of granting nothing. */
const bootstrapAdmins = z.string().transform((text, ctx): BootstrapAdmin[] => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON list of {tenant, principal, resource, purposes}' });
    return z.NEVER;
  }
  const admins = z.array(BootstrapAdmin).min(1).max(100).safeParse(parsed);
  if (!admins.success) {
    ctx.addIssue({ code: 'custom', message: `must be a JSON list of {tenant, principal: {id, kind}, resource: {kind, id}, purposes}: ${admins.error.issues[0]?.message ?? 'invalid'}` });
    return z.NEVER;
  }
  return admins.data;
});

export const brokerEnvShape = {
  MEMORY_HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'listen address' }),
  MEMORY_PORT: integer(8080, 0, 65535).meta({ description: 'listen port (0 = any free port)' }),
  MEMORY_ISSUER_NAME: z.string().min(1).default('governed-memory').meta({ description: '`iss` of capabilities' }),
  MEMORY_RATE_LIMIT_PER_MINUTE: integer(1200, 1, 1_000_000).meta({ description: 'requests per minute per capability subject' }),
  MEMORY_BODY_LIMIT_BYTES: integer(256 * 1024, 1024, 16 * 1024 * 1024)
    .meta({ description: `request body limit (content itself ≤ ${LIMITS.maxContentBytes / 1024} KiB)` }),
  MEMORY_REQUEST_TIMEOUT: duration('30s', true).meta({ description: 'HTTP request timeout' }),
  MEMORY_REPLY_TIMEOUT: duration('10s', true)
    .meta({ description: "wait for write-admission's reply (then 503, safe to retry with the same key)" }),
  MEMORY_READ_YOUR_WRITES_TIMEOUT: duration('5s', true).meta({
    description: 'wait for projections after an accepted command, and the bound of a read with a consistency token (a summary read waits for the summaries, which lag up to 1 s: keep it above that)',
  }),
  MEMORY_PACKET_TTL: duration('15m').meta({ description: 'evidence packet lifetime' }),
  MEMORY_CACHE_TTL: duration('60s').meta({ description: 'retrieval cache entry lifetime' }),
  MEMORY_ASYNC_BACKLOG: integer(1_000, 1, 10_000_000).meta({
    description: 'asynchronous writes (`Prefer: respond-async`) are refused with a retriable 503 and `Retry-After` while write-admission and the projections are this many messages behind',
  }),
  MEMORY_POLICY_DIR: z.string().min(1).optional().meta({
    description: 'a directory with `schema.cedarschema` and `default.cedar` replacing `packages/policy/policies/`',
    whenUnset: 'shipped set',
  }),
  MEMORY_BOOTSTRAP_ADMINS: bootstrapAdmins.optional().meta({
    description: 'administrators the broker grants at start, before anyone can: a JSON list of `{"tenant", "principal": {"id", "kind"}, "resource": {"kind", "id"}, "purposes": [...]}`, each an `admin` grant with id `bootstrap.<principal>.<kind>.<id>`, added once ([api.md](api.md#administration-grants-delegations-revocation-legal-holds))',
    whenUnset: 'none',
  }),
  MEMORY_ADMIN_BOOTSTRAP: z.enum(['issuer', 'configured']).default('issuer').meta({
    description: "how a resource gets its first administrator: `issuer` — an `admin` capability (the issuer's word) may add the first admin grant of a resource that has none, and `MEMORY_BOOTSTRAP_ADMINS` too; `configured` — only `MEMORY_BOOTSTRAP_ADMINS`, and every other admin grant needs Cedar's `admin`",
  }),
  MEMORY_OPS_TENANTS: z.string().min(1)
    .transform((text, ctx) => {
      const tenants = text.split(',').map((t) => t.trim()).filter((t) => t !== '');
      for (const tenant of tenants) if (!Id.safeParse(tenant).success) ctx.addIssue({ code: 'custom', message: `not a tenant id: ${tenant}` });
      if (tenants.length === 0) ctx.addIssue({ code: 'custom', message: 'names no tenant' });
      return tenants;
    })
    .optional()
    .meta({
      description: "comma-separated tenants whose administrators may read `GET /v1/ops/overview`, the deployment's lag and throughput (a host serving several tenants names its own) ([console.md](console.md#operations))",
      whenUnset: 'the administrators of every tenant',
    }),
  MEMORY_CONSOLE_DIR: z.string().min(1).optional().meta({
    description: 'the built review and compliance console served at `/console/` ([console.md](console.md))',
    whenUnset: '`apps/console/dist` (built by `scripts/setup.sh`)',
  }),
  MEMORY_QUERY_AUDIT: z.enum(['on', 'off']).default('off').meta({
    description: '`on`: one log line per query the read path sends to the search or vector index — request, principal, purpose and partitions, never the text ([api.md](api.md#query-audit))',
  }),
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
    adminBootstrap: e.MEMORY_ADMIN_BOOTSTRAP,
    bootstrapAdmins: e.MEMORY_BOOTSTRAP_ADMINS ?? [],
    ...(e.MEMORY_POLICY_DIR === undefined ? {} : { policyDir: e.MEMORY_POLICY_DIR }),
    ...(e.MEMORY_CONSOLE_DIR === undefined ? {} : { consoleDir: e.MEMORY_CONSOLE_DIR }),
    ...(e.MEMORY_OPS_TENANTS === undefined ? {} : { opsTenants: e.MEMORY_OPS_TENANTS }),
  };
}

/** write-admission's idempotency window, snapshots and memory bound, read the same way by the embedded runtime and the service. */
export const admissionEnvShape = {
  MEMORY_ADMISSION_SNAPSHOT_INTERVAL: duration('5s', true).meta({
    description: 'how often write-admission stores its changed subject states and checkpoints (a restart folds about this much of the log; see [pipeline.md](pipeline.md#write-admission-at-start))',
  }),
  MEMORY_ADMISSION_MEMORY_ENTRIES: integer(500_000, 1_000, 1_000_000_000).meta({
    description: 'about how many records, idempotency slots and deferred events write-admission keeps in memory; the other subjects are loaded from their snapshots when a command needs them',
  }),
  MEMORY_IDEMPOTENCY_WINDOW: duration('24h').meta({ description: 'how long an idempotency key returns its first result' }),
};
const AdmissionEnv = z.object(admissionEnvShape);

export function admissionSettingsOf(e: z.infer<typeof AdmissionEnv>) {
  return { snapshotIntervalMs: e.MEMORY_ADMISSION_SNAPSHOT_INTERVAL, maxEntries: e.MEMORY_ADMISSION_MEMORY_ENTRIES };
}

/** The expiry-scheduler's interval, read the same way by the embedded runtime and the service. */
export const expiryEnvShape = {
  MEMORY_EXPIRY_TICK: duration('1s', true).meta({ description: 'expiry-scheduler interval' }),
};

/** The deletion-orchestrator's deadline and retry, read the same way by the embedded runtime and the service. */
export const deletionEnvShape = {
  MEMORY_DELETION_DEADLINE: duration('60s').meta({ description: 'a deletion job not verified by then fails with an alert' }),
  MEMORY_DELETION_VERIFY_RETRY: duration('500ms', true).meta({ description: 'delay before re-running a verification that found a copy' }),
};
