/**
 * The Helm chart's files/topology.json is rendered from the code (`pnpm deploy:chart`,
 * scripts/chart-topology.ts): a consumer group, topic, service or variable added in the code
 * and missing from the chart fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONSUMER_GROUPS, DEPLOYED_SERVICES, GROUP_SUBSCRIPTIONS, INGEST_RESULTS_TOPIC_PREFIX, dlqTopic } from '@gm/contracts';
import { memoryTopicSpecs } from '@gm/bus';
import { TOPOLOGY_FILE, renderTopology } from './chart-topology.ts';

interface Topology {
  services: Record<string, { groups: Array<{ group: string; topics: string[] }>; variables: Array<{ name: string }> }>;
  topics: Array<{ name: string }>;
}
const committed = (): Topology => JSON.parse(readFileSync(TOPOLOGY_FILE, 'utf8')) as Topology;

describe("the chart's view of the code (files/topology.json)", () => {
  it('is what the code renders (run pnpm deploy:chart after changing a service, group, topic or variable)', () => {
    expect(readFileSync(TOPOLOGY_FILE, 'utf8')).toBe(renderTopology());
  });

  it('names every consumer group of the code once, under the service that runs it', () => {
    const groups = Object.values(committed().services).flatMap((s) => s.groups.map((g) => g.group));
    expect(groups.toSorted()).toEqual(Object.values(CONSUMER_GROUPS).toSorted());
    for (const [group, { service }] of Object.entries(GROUP_SUBSCRIPTIONS)) {
      expect(committed().services[service]?.groups.map((g) => g.group), group).toContain(group);
    }
  });

  it('names the per-tenant results topics by the prefix their ACLs grant, and lists none of them as a topic', () => {
    const topology = JSON.parse(readFileSync(TOPOLOGY_FILE, 'utf8')) as Topology & { runtimeTopics: Array<{ prefix: string; createdBy: string }> };
    expect(topology.runtimeTopics).toEqual([expect.objectContaining({ prefix: INGEST_RESULTS_TOPIC_PREFIX, createdBy: 'ingest-gateway' })]);
    expect(topology.topics.filter((t) => t.name.startsWith(INGEST_RESULTS_TOPIC_PREFIX.slice(0, -1)))).toEqual([]);
  });

  it('names every service and every topic with its dead letters', () => {
    expect(Object.keys(committed().services).toSorted()).toEqual([...DEPLOYED_SERVICES].toSorted());
    const topics = memoryTopicSpecs(1).flatMap((s) => [s.name, dlqTopic(s.name)]);
    expect(committed().topics.map((t) => t.name).toSorted()).toEqual(topics.toSorted());
  });
});
