/**
 * Topic replication and retention on the real broker (docs/reliability.md): topics come out as
 * the deployment asks, and the production check names every topic that could lose acknowledged
 * records. The local engine is one broker: a factor above 1 is refused there, which is exactly
 * what an under-sized cluster does.
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { TOPICS } from '@gm/contracts';
import { engineEndpoint } from '@gm/testing/engines';
import { KEPT_FOREVER_TOPICS, memoryTopicSpecs } from '../topics.ts';
import { createKafkaBus } from './kafka-bus.ts';
import { topicDurabilityProblems } from './kafka-durability.ts';

const brokers = (): string[] => engineEndpoint('kafka').split(',');
const prefixes: string[] = [];
const namespace = (): string => {
  const prefix = `gm-durability-${randomUUID().slice(0, 8)}.`;
  prefixes.push(prefix);
  return prefix;
};

afterAll(async () => {
  const admin = new Kafka({ clientId: 'gm-durability-cleanup', brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
  if (topics.length > 0) await admin.deleteTopics({ topics });
  await admin.disconnect();
});

const SPECS = memoryTopicSpecs(2);
const NAMES = SPECS.map((s) => s.name);

describe('topic replication and retention (kafka)', () => {
  it('creates the topics with the replication asked for, the sources of truth kept for good, and finds nothing to refuse', async () => {
    const topicPrefix = namespace();
    const bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-durability-spec', topicPrefix, replication: { factor: 1, minInsyncReplicas: 1 } });
    try {
      await bus.ensureTopics(SPECS);
    } finally {
      await bus.close();
    }
    expect(await topicDurabilityProblems({ brokers: brokers(), topicPrefix }, NAMES, {
      replicationFactor: 1, minInsyncReplicas: 1, keptForever: KEPT_FOREVER_TOPICS,
    })).toEqual([]);
  });

  it('names every topic replicated below the production settings, with both values', async () => {
    const topicPrefix = namespace();
    const bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-durability-spec', topicPrefix });
    try {
      await bus.ensureTopics(SPECS);
    } finally {
      await bus.close();
    }
    const problems = await topicDurabilityProblems({ brokers: brokers(), topicPrefix }, NAMES, {
      replicationFactor: 3, minInsyncReplicas: 2, keptForever: KEPT_FOREVER_TOPICS,
    });
    for (const name of NAMES) {
      expect(problems).toContain(`${name}: replication factor 1, below the required 3`);
      expect(problems).toContain(`${name}: min.insync.replicas 1, below the required 2`);
    }
  });

  it('names a source of truth created with a bounded retention', async () => {
    const topicPrefix = namespace();
    const bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-durability-spec', topicPrefix });
    try {
      // As an older version or a hand-made topic would have it: the broker's default retention.
      await bus.ensureTopics([{ name: TOPICS.events, partitions: 2 }, { name: TOPICS.policyChanges, partitions: 2, config: { 'retention.ms': '-1', 'retention.bytes': '-1' } }]);
    } finally {
      await bus.close();
    }
    const problems = await topicDurabilityProblems({ brokers: brokers(), topicPrefix }, [TOPICS.events, TOPICS.policyChanges], {
      replicationFactor: 1, minInsyncReplicas: 1, keptForever: KEPT_FOREVER_TOPICS,
    });
    expect(problems).toEqual([expect.stringMatching(/^memory\.events: retention\.ms \d+, but a source of truth keeps every record \(-1\)$/)]);
  });

  it('refuses a replication factor the cluster cannot give, naming the setting and the broker\'s reason', async () => {
    const topicPrefix = namespace();
    const bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-durability-spec', topicPrefix, replication: { factor: 3, minInsyncReplicas: 2 } });
    try {
      await expect(bus.ensureTopics(SPECS)).rejects.toMatchObject({
        code: 'MEM_VALIDATION', message: expect.stringMatching(/replication factor 3 \(MEMORY_KAFKA_REPLICATION_FACTOR; .*\): .*Replication-factor is invalid/),
      });
    } finally {
      await bus.close();
    }
  });
});
