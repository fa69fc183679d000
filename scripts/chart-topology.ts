/**
 * What the Helm chart (deploy/helm/governed-memory) must know of the code, rendered from the
 * code's one definition of each: the services and their commands, the variables each one's zod
 * env schema reads, the consumer groups each runs with the topics they read (design §4), and
 * every topic with its Kafka configs. `pnpm deploy:chart` writes it to the chart's
 * files/topology.json; scripts/chart-topology.unit.spec.ts holds the committed file to it,
 * so the chart cannot drift from the code.
 */
import path from 'node:path';
import { DEPLOYED_SERVICES, GROUP_SUBSCRIPTIONS, INGEST_RESULTS_TOPIC_PREFIX, dlqTopic, serviceCommand } from '@gm/contracts';
import { ingestResultsTopicSpec, memoryTopicSpecs } from '@gm/bus';
import { envVariablesOf } from '@gm/config';
import { ROOT, SERVICE_ENVS } from './config-docs.ts';

export const TOPOLOGY_FILE = path.join(ROOT, 'deploy/helm/governed-memory/files/topology.json');

/**
 * The files a service reads its secrets from: the variable, and the key of the deployment's
 * Secret that holds the file (docs/deploy.md#secrets). A service mounts only the ones it reads.
 */
export const SECRET_FILES: Readonly<Record<string, string>> = {
  MEMORY_MASTER_KEY_FILE: 'master-keys.json',
  MEMORY_SIGNING_KEY_FILE: 'capability-signing.jwk.json',
  MEMORY_RECEIPT_KEY_FILE: 'receipt-signing.jwk.json',
  MEMORY_ISSUER_CREDENTIAL_FILE: 'issuer-credential',
};

export function renderTopology(): string {
  const services = Object.fromEntries(DEPLOYED_SERVICES.map((service) => {
    const variables = envVariablesOf(SERVICE_ENVS[service]);
    return [service, {
      command: serviceCommand(service),
      variables: variables.map((v) => ({ name: v.name, required: v.unset.kind === 'required' })),
      secretFiles: Object.fromEntries(variables.filter((v) => SECRET_FILES[v.name] !== undefined).map((v) => [v.name, SECRET_FILES[v.name]])),
      groups: Object.entries(GROUP_SUBSCRIPTIONS).filter(([, s]) => s.service === service).map(([group, s]) => ({ group, topics: s.topics })),
    }];
  }));
  // The partition count is the deployment's (MEMORY_PARTITIONS): the chart sets it on every topic.
  const topics = memoryTopicSpecs(1).flatMap((spec) => [
    { name: spec.name, compacted: spec.compacted === true, config: spec.config ?? {} },
    { name: dlqTopic(spec.name), compacted: false, config: spec.deadLetterConfig ?? {} },
  ]);
  // Topics made at runtime, one per tenant, that no chart can list: the prefix their ACLs grant
  // (docs/deploy.md#kafka-acls), and who creates them. KafkaTopic resources are not made for them.
  const runtimeTopics = [{
    prefix: INGEST_RESULTS_TOPIC_PREFIX, createdBy: 'ingest-gateway', producedBy: ['ingest-gateway', 'write-admission'],
    partitions: ingestResultsTopicSpec('tenant').partitions, perTenant: true,
  }];
  return `${JSON.stringify({ generatedBy: 'pnpm deploy:chart', services, topics, runtimeTopics }, null, 2)}\n`;
}
