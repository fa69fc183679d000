import { CONSUMER_GROUPS, type ConsumerGroup } from './consumer-groups.ts';
import { TOPICS, type TopicName } from './topics.ts';

/**
 * The distributed runtime's services, each its own process (`services/<name>/src/main.ts`), in
 * start order: consumers before the edges that feed them. The local launcher, the Helm chart
 * and docker-compose deploy exactly these.
 */
export const DEPLOYED_SERVICES = [
  'write-admission', 'projector', 'index-builder', 'vector-indexer', 'expiry-scheduler', 'deletion-orchestrator', 'receipt-verifier', 'ingest-gateway', 'retrieval-broker',
] as const;
export type DeployedService = (typeof DEPLOYED_SERVICES)[number];

/**
 * How a service is run, from the repository's root (the image's working directory): tracing is
 * registered before the service's modules load, and stays off unless OTEL_* asks
 * (docs/operations.md#traces). The chart, docker-compose and the local launcher run exactly this.
 */
export const serviceCommand = (service: DeployedService): string[] =>
  ['node', '--import', 'tsx', '--import', './packages/observability/src/register-tracing.ts', `services/${service}/src/main.ts`];

export interface GroupSubscription {
  /** The service whose processes are the group's members: scaling it scales the group. */
  service: DeployedService;
  /** What the group reads: its lag on these is what an autoscaler watches. */
  topics: readonly TopicName[];
}

/**
 * Which service runs each durable consumer group and what it reads. Deployments scale a
 * service on its groups' lag (the chart's KEDA triggers are rendered from this table), so a
 * group missing here would never scale its service; a stack spec holds the running services'
 * subscriptions, read back from their `gm_consumer_lag`, to it.
 */
export const GROUP_SUBSCRIPTIONS: Readonly<Record<ConsumerGroup, GroupSubscription>> = {
  [CONSUMER_GROUPS.writeAdmission]: { service: 'write-admission', topics: [TOPICS.commands] },
  [CONSUMER_GROUPS.ingestGateway]: { service: 'ingest-gateway', topics: [TOPICS.ingest] },
  [CONSUMER_GROUPS.projector]: { service: 'projector', topics: [TOPICS.events] },
  [CONSUMER_GROUPS.policyProjector]: { service: 'projector', topics: [TOPICS.policyChanges] },
  [CONSUMER_GROUPS.primaryTarget]: { service: 'projector', topics: [TOPICS.deletionTasks] },
  [CONSUMER_GROUPS.indexBuilder]: { service: 'index-builder', topics: [TOPICS.events] },
  [CONSUMER_GROUPS.summaryBuilder]: { service: 'index-builder', topics: [TOPICS.events] },
  [CONSUMER_GROUPS.indexTargets]: { service: 'index-builder', topics: [TOPICS.deletionTasks] },
  [CONSUMER_GROUPS.vectorIndexer]: { service: 'vector-indexer', topics: [TOPICS.events] },
  [CONSUMER_GROUPS.vectorTargets]: { service: 'vector-indexer', topics: [TOPICS.deletionTasks] },
  [CONSUMER_GROUPS.expiryScheduler]: { service: 'expiry-scheduler', topics: [TOPICS.events] },
  [CONSUMER_GROUPS.deletionOrchestrator]: { service: 'deletion-orchestrator', topics: [TOPICS.events, TOPICS.deletionAcks, TOPICS.policyChanges] },
  [CONSUMER_GROUPS.receiptVerifier]: { service: 'receipt-verifier', topics: [TOPICS.deletionTasks] },
  [CONSUMER_GROUPS.receiptSigner]: { service: 'receipt-verifier', topics: [TOPICS.deletionTasks] },
  [CONSUMER_GROUPS.brokerTargets]: { service: 'retrieval-broker', topics: [TOPICS.deletionTasks] },
};
