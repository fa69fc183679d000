import type { FastifyInstance } from 'fastify';
import type { Bus } from '@gm/bus';
import type { Clock, CommandReply, ServiceHandle } from '@gm/contracts';
import { RuntimeProver } from '@gm/config';
import type { Logger, Metrics } from '@gm/observability';
import { CapabilityIssuer, type CompiledPolicySet, type SigningKeyPair } from '@gm/policy';
import type { SearchIndex, SummaryStore } from '@gm/search-index';
import type { SemanticLeg } from '@gm/retrieval';
import type { StateStore } from '@gm/state-store';
import { edgeAuthority } from '@gm/write-edge';
import { buildApp } from './app.ts';
import { PipelineBacklog } from './backlog.ts';
import { ConsistencyTokens } from './consistency-token.ts';
import { CommandGateway, type ProjectionCheck } from './command-gateway.ts';
import { startBrokerTargets } from './deletion-targets.ts';
import type { BrokerConfig } from './deps.ts';
import { grantBootstrapAdmins } from './admin-authz.ts';
import { PolicyGateway } from './policy-gateway.ts';
import { OpsOverviewReader, scrapedSource, type OpsSource } from './ops/overview.ts';
import { auditedIndex, auditedVectors } from './query-audit.ts';

export interface RetrievalBrokerOptions {
  bus: Bus;
  index: SearchIndex;
  /** See BrokerDeps.semantic. */
  semantic?: SemanticLeg;
  summaries: SummaryStore;
  state: StateStore;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** See BrokerDeps.exposition. */
  exposition?(): Promise<{ contentType: string; text: string }>;
  signing: SigningKeyPair;
  issuerName: string;
  issuerCredential: string;
  /** Names this instance's reply consumer group; unique per running broker. */
  instanceId: string;
  host: string;
  port: number;
  config: BrokerConfig;
  /** Other services' /metrics URLs the ops overview reads besides this process's (MEMORY_OPS_METRICS_URLS). */
  opsMetricsUrls?: readonly string[];
  /** See BrokerDeps.consoleDir. */
  consoleDir?: string;
  /** The validated Cedar policy set (loadPolicySet): loaded by the caller so that a bad one stops it before anything opens. */
  policySet: CompiledPolicySet;
  ready(): Promise<boolean>;
}

export interface RunningBroker extends ServiceHandle {
  url: string;
  app: FastifyInstance;
}

/** A record-changing result is folded once the record hash holds its version; a forget has no record to check. */
function projectionCheck(state: StateStore): ProjectionCheck {
  return async (tenant, result) => {
    if (result.id === undefined || result.version === undefined) return true;
    const meta = await state.records.get(tenant, result.id);
    return meta !== null && meta.version >= result.version;
  };
}

/** An asynchronous write's outcome, for GET /v1/commands/{id} (its principal only). */
function storeOutcome(state: StateStore): (reply: CommandReply) => Promise<void> {
  return async (reply) => {
    if (reply.storedFor === undefined) return;
    const { tenantId, principalId } = reply.storedFor;
    await state.commands.settle(tenantId, reply.commandId, reply.outcome === 'accepted'
      ? { principalId, state: 'accepted', result: reply.result }
      : { principalId, state: 'rejected', code: reply.code, detail: reply.detail, retriable: reply.retriable });
  };
}

/** The retrieval-broker: reply gateway, deletion targets of the read path, and the HTTP API. */
export async function startRetrievalBroker(o: RetrievalBrokerOptions): Promise<RunningBroker> {
  const targets = await startBrokerTargets({ bus: o.bus, state: o.state, clock: o.clock });
  const gateway = new CommandGateway(o.bus, {
    instanceId: o.instanceId, replyTimeoutMs: o.config.replyTimeoutMs, readYourWritesTimeoutMs: o.config.readYourWritesTimeoutMs,
  }, projectionCheck(o.state), storeOutcome(o.state));
  await gateway.start();
  const { pdp, verifier } = await edgeAuthority({ state: o.state, clock: o.clock, policySet: o.policySet, publicJwk: o.signing.publicJwk, issuerName: o.issuerName });
  // The query audit sits at the adapters: it shows what the indexes were asked.
  const index = o.config.queryAudit === true ? auditedIndex(o.index, o.log) : o.index;
  const semantic = o.semantic === undefined || o.config.queryAudit !== true ? o.semantic : { ...o.semantic, vectors: auditedVectors(o.semantic.vectors, o.log) };
  const policy = new PolicyGateway({ bus: o.bus, state: o.state, clock: o.clock, log: o.log, metrics: o.metrics }, { timeoutMs: o.config.readYourWritesTimeoutMs });
  // gm_ready says at each scrape what /readyz would (the not-ready alert of docs/deploy.md).
  o.metrics.addReadinessCheck(o.ready);
  await grantBootstrapAdmins(o.config.bootstrapAdmins ?? [], o.state, policy, o.log);
  const local: OpsSource = {
    name: 'local',
    read: async () => (o.exposition === undefined ? o.metrics.registry.metrics() : (await o.exposition()).text),
  };
  const ops = new OpsOverviewReader([local, ...(o.opsMetricsUrls ?? []).map((url) => scrapedSource(url))], o.bus);
  const app = await buildApp({
    bus: o.bus, index, ...(semantic === undefined ? {} : { semantic }), summaries: o.summaries, state: o.state, gateway, clock: o.clock, metrics: o.metrics, log: o.log,
    // Policy changes wait for the policy projector as writes wait for the projections.
    policy,
    pdp,
    verifier,
    issuer: await CapabilityIssuer.create(o.signing.privateJwk, o.issuerName),
    issuerCredential: o.issuerCredential,
    prover: new RuntimeProver(o.signing.privateJwk),
    tokens: new ConsistencyTokens(o.issuerCredential),
    backlog: new PipelineBacklog(o.bus, o.config.asyncBacklogLimit),
    config: o.config,
    ops,
    ...(o.consoleDir === undefined ? {} : { consoleDir: o.consoleDir }),
    ready: o.ready,
    ...(o.exposition === undefined ? {} : { exposition: o.exposition }),
  });
  const url = await app.listen({ host: o.host, port: o.port });
  return {
    url,
    app,
    close: async () => {
      await app.close();
      await gateway.close();
      await targets.close();
    },
  };
}
