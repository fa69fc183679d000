import { z } from 'zod';
import {
  DistributedEnv, WithElasticsearch, WithInstanceId, WithMasterKeys, WithPolicy, WithRateLimit, WithRedis, WithSemantic, WithSigningKey, duration, integer,
} from '@gm/config';
import { Id, LIMITS, PrincipalKind, Purpose, ResourceRef } from '@gm/contracts';

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

/** Settings of the HTTP API, read the same way by the embedded runtime and the broker process. */
export const brokerEnvShape = {
  MEMORY_HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'listen address' }),
  MEMORY_PORT: integer(8080, 0, 65535).meta({ description: 'listen port (0 = any free port)' }),
  MEMORY_ISSUER_NAME: WithPolicy.shape.MEMORY_ISSUER_NAME,
  MEMORY_RATE_LIMIT_PER_MINUTE: WithRateLimit.shape.MEMORY_RATE_LIMIT_PER_MINUTE,
  MEMORY_BODY_LIMIT_BYTES: integer(256 * 1024, 1024, 16 * 1024 * 1024)
    .meta({ description: `request body limit (content itself ≤ ${LIMITS.maxContentBytes / 1024} KiB)` }),
  MEMORY_REQUEST_TIMEOUT: duration('30s', true).meta({
    description: 'HTTP request timeout: to receive a request (then 408), and to answer it (a request still waiting then is answered a retriable 503 `MEM_TIMEOUT`)',
  }),
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
  MEMORY_POLICY_DIR: WithPolicy.shape.MEMORY_POLICY_DIR,
  MEMORY_BOOTSTRAP_ADMINS: bootstrapAdmins.optional().meta({
    description: 'administrators the broker grants at start, before anyone can: a JSON list of `{"tenant", "principal": {"id", "kind"}, "resource": {"kind", "id"}, "purposes": [...]}`, each an `admin` grant checked at every start by its whole content (its id, `bootstrap.<40 hex>`, derives from it) and added when missing; a changed entry replaces the grant it named ([api.md](api.md#administration-grants-delegations-revocation-legal-holds))',
    whenUnset: 'none',
  }),
  MEMORY_ADMIN_BOOTSTRAP: z.enum(['issuer', 'configured']).optional().meta({
    description: "how a resource gets its first administrator: `issuer` — an `admin` capability (the issuer's word) may add the first admin grant of a resource (or the tenant) that never had one, once per resource whatever the grant, and `MEMORY_BOOTSTRAP_ADMINS` too; `configured` — only `MEMORY_BOOTSTRAP_ADMINS`, and every other admin grant needs Cedar's `admin` ([security.md](security.md#the-administration-plane))",
    whenUnset: '`configured` with `MEMORY_PRODUCTION=true`, else `issuer`',
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

/** `production`: MEMORY_PRODUCTION, where the deployment reads it (the distributed runtime); its default bootstrap is `configured`. */
export function brokerSettingsOf(e: z.infer<typeof BrokerEnv>, production = false) {
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
    adminBootstrap: e.MEMORY_ADMIN_BOOTSTRAP ?? (production ? 'configured' as const : 'issuer' as const),
    bootstrapAdmins: e.MEMORY_BOOTSTRAP_ADMINS ?? [],
    ...(e.MEMORY_POLICY_DIR === undefined ? {} : { policyDir: e.MEMORY_POLICY_DIR }),
    ...(e.MEMORY_CONSOLE_DIR === undefined ? {} : { consoleDir: e.MEMORY_CONSOLE_DIR }),
    ...(e.MEMORY_OPS_TENANTS === undefined ? {} : { opsTenants: e.MEMORY_OPS_TENANTS }),
  };
}


/** The retrieval-broker's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const RetrievalBrokerEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithElasticsearch.shape,
  ...brokerEnvShape,
  ...WithMasterKeys.shape,
  ...WithSemantic.shape,
  ...WithSigningKey.shape,
  MEMORY_ISSUER_CREDENTIAL_FILE: z.string().min(1).meta({
    description: 'a file holding the bearer credential for `POST /v1/capabilities` (≥ 32 characters; `generate-credentials.ts` writes `DIR/issuer-credential`)',
  }),
  MEMORY_OPS_METRICS_URLS: z.string().min(1)
    .transform((text, ctx) => {
      const urls = text.split(',').map((u) => u.trim()).filter((u) => u !== '');
      for (const url of urls) {
        if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) ctx.addIssue({ code: 'custom', message: `not an http(s) URL: ${url}` });
      }
      return urls;
    })
    .optional()
    .meta({
      description: "comma-separated `/metrics` URLs of the other services (e.g. each one's `HEALTH_PORT`): what `GET /v1/ops/overview` aggregates besides this broker's own ([console.md](console.md#operations))",
      whenUnset: "this broker's own metrics only",
    }),
  ...WithInstanceId.shape,
});
