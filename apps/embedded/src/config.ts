import path from 'node:path';
import { z } from 'zod';
import type { TtlPolicy } from '@gm/domain';
import { DEFAULT_MODEL_DIR } from '@gm/embedding';
import { WithMasterKeys, integer, logEnvShape, parseDuration } from '@gm/config';
import { brokerEnvShape, brokerSettingsOf, type BootstrapAdmin } from '@gm/retrieval-broker/env';
import { admissionEnvShape, admissionSettingsOf, ttlPolicyOf, ttlShape } from '@gm/write-admission/env';
import { deletionEnvShape } from '@gm/deletion-orchestrator/env';
import { expiryEnvShape } from '@gm/expiry-scheduler/env';

export { parseDuration };

/** The embedded runtime's environment; `pnpm docs:config` renders its table in docs/configuration.md. */
export const EnvSchema = z.object({
  ...brokerEnvShape,
  ...admissionEnvShape,
  MEMORY_DATA_DIR: z.string().min(1).default('.data').meta({ description: 'data directory (created if missing)' }),
  MEMORY_ISSUER_CREDENTIAL: z.string().min(32, 'must be at least 32 characters').optional().meta({
    description: 'bearer credential for `POST /v1/capabilities` (≥ 32 chars)',
    whenUnset: 'generated into `<data>/issuer-credential`',
  }),
  ...logEnvShape,
  MEMORY_PARTITIONS: integer(4, 1, 256).meta({
    description: 'partitions per topic (fixed per data directory: another count exits 2, naming the topic and both counts)',
  }),
  ...expiryEnvShape,
  ...deletionEnvShape,
  // Master keys for content encryption (§8.5); neither set = generated into the data directory (master-keys.ts).
  MEMORY_MASTER_KEY_FILE: z.string().min(1).optional().meta({
    description: 'JSON `{"active": id, "keys": {id: base64 of 32 bytes}}`: the master keys that wrap every subject key (distributed: every service but the orchestrator and the expiry-scheduler needs it)',
    whenUnset: '`<data>/keys/master-keys.json`, generated at first start',
  }),
  MEMORY_MASTER_KEY: WithMasterKeys.shape.MEMORY_MASTER_KEY,
  MEMORY_LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto').meta({
    description: '`pnpm start`\'s log on stdout: `json`, one object a line (for collectors); `pretty`, one readable line an entry; `auto`, pretty when stdout is a terminal and JSON otherwise',
  }),
  MEMORY_PIPELINE: z.enum(['thread', 'inline']).default('thread').meta({
    description: 'embedded: where the services behind the API run — `thread`, two worker threads of their own (what writes wait for, and what follows them; see [pipeline.md](pipeline.md#where-the-embedded-stages-run)), or `inline`, the HTTP server\'s thread',
  }),
  // Semantic retrieval (§6.7): a vector per active record, embedded by the local model.
  MEMORY_SEMANTIC: z.enum(['on', 'off']).default('on').meta({
    description: 'keep a vector per active record and search in `hybrid` mode by default; `off` = lexical only, no model loaded ([embedding.md](embedding.md#search-modes)); on the distributed runtime one value for every process ([distributed.md](distributed.md))',
  }),
  // The .onnx file and its tokenizer.json; loadConfig resolves an unset one to DEFAULT_MODEL_DIR.
  MEMORY_EMBEDDING_MODEL_DIR: z.string().min(1).optional().meta({
    description: 'the model: the directory of its `.onnx` file and tokenizer, whose names say which model it is (`bash infra/local/model.sh path e5-small-v2-q` for the one with better recall on conversations, slower and less precise; [embedding.md](embedding.md#choosing-the-model)); a directory without a model stops the start with the fetch command, and a change of model re-embeds every record',
    whenUnset: `\`${DEFAULT_MODEL_DIR}\``,
  }),
  ...ttlShape,
});

export interface RuntimeConfig {
  host: string;
  port: number;
  dataDir: string;
  issuerCredential?: string;
  issuerName: string;
  logLevel: string;
  /** `pnpm start`'s log format (main.ts): `auto` = pretty on a terminal, JSON otherwise. */
  logFormat: 'auto' | 'json' | 'pretty';
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
  /** MEMORY_ADMIN_BOOTSTRAP and MEMORY_BOOTSTRAP_ADMINS (retrieval-broker's admin-authz.ts). */
  adminBootstrap: 'issuer' | 'configured';
  bootstrapAdmins: BootstrapAdmin[];
  policyDir?: string;
  /** MEMORY_OPS_TENANTS: whose administrators may read GET /v1/ops/overview (absent: every tenant's). */
  opsTenants?: string[];
  /** MEMORY_CONSOLE_DIR: the built console served at /console/ (default apps/console/dist). */
  consoleDir?: string;
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
    logFormat: e.MEMORY_LOG_FORMAT,
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
