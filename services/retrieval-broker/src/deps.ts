import type { Bus } from '@gm/bus';
import type { RuntimeProver } from '@gm/config';
import type { Clock, PrincipalKind, ResourceRef } from '@gm/contracts';
import type { Logger, Metrics } from '@gm/observability';
import type { CapabilityIssuer, CapabilityVerifier, PolicyDecisionPoint } from '@gm/policy';
import type { SearchIndex, SummaryStore } from '@gm/search-index';
import type { SemanticLeg } from '@gm/retrieval';
import type { StateStore } from '@gm/state-store';
import type { CommandGateway } from './command-gateway.ts';
import type { PipelineBacklog } from './backlog.ts';
import type { ConsistencyTokens } from './consistency-token.ts';
import type { PolicyGateway } from './policy-gateway.ts';
import type { OpsOverviewReader } from './ops/overview.ts';

export interface BrokerConfig {
  replyTimeoutMs: number;
  readYourWritesTimeoutMs: number;
  packetTtlMs: number;
  cacheTtlMs: number;
  rateLimitPerMinute: number;
  bodyLimitBytes: number;
  requestTimeoutMs: number;
  /** Asynchronous writes are refused while write-admission and the projections are this many messages behind. */
  asyncBacklogLimit: number;
  /** Log every query sent to the search and vector indexes (query-audit.ts); default off. */
  queryAudit?: boolean;
  /** How a resource gets its first administrator (admin-authz.ts); default `issuer`. */
  adminBootstrap?: 'issuer' | 'configured';
  /** Tenants whose administrators may read the ops overview (MEMORY_OPS_TENANTS); absent = every tenant's. */
  opsTenants?: readonly string[];
  /** Administrators granted at start (MEMORY_BOOTSTRAP_ADMINS). */
  bootstrapAdmins?: ReadonlyArray<{ tenant: string; principal: { id: string; kind: PrincipalKind }; resource: ResourceRef; purposes: string[] }>;
}

export interface BrokerDeps {
  bus: Bus;
  index: SearchIndex;
  /** Vectors and the query model (§6.7); absent = lexical search only. */
  semantic?: SemanticLeg;
  summaries: SummaryStore;
  state: StateStore;
  pdp: PolicyDecisionPoint;
  verifier: CapabilityVerifier;
  issuer: CapabilityIssuer;
  issuerCredential: string;
  /** Signs the runtime's proof of who it is (routes/runtime-proof.ts), with the capability signing key. */
  prover: RuntimeProver;
  gateway: CommandGateway;
  /** Refuses asynchronous writes while the pipeline is too far behind (backlog.ts). */
  backlog: PipelineBacklog;
  tokens: ConsistencyTokens;
  policy: PolicyGateway;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** /metrics when `metrics` is not all there is (the embedded pipeline thread keeps its own); default: `metrics`. */
  exposition?(): Promise<{ contentType: string; text: string }>;
  config: BrokerConfig;
  /** GET /v1/ops/overview's readings (ops/overview.ts). */
  ops: OpsOverviewReader;
  /** The built console served at /console/ (routes/console.ts); default apps/console/dist. */
  consoleDir?: string;
  /** Whether every dependency answers (readiness). */
  ready(): Promise<boolean>;
}
