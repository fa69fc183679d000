/**
 * What a production deployment refuses to start on (docs/reliability.md): topics replicated
 * below the deployment's factor or its `min.insync.replicas`, and sources of truth that do not
 * keep their records for good. Read from the cluster itself, so a topic created by hand or
 * before the settings is judged as it is, not as this process would have created it.
 */
// kafkajs is CommonJS: Node's ESM loader does not see its ConfigResourceTypes as a named export.
import { setTimeout as delay } from 'node:timers/promises';
import kafkajs, { Kafka, logLevel, type Admin } from 'kafkajs';
import { Namespace } from './kafka-codec.ts';

export interface DurabilityRequirement {
  replicationFactor: number;
  minInsyncReplicas: number;
  /** Topics that must keep every record (retention.ms and retention.bytes -1). */
  keptForever: readonly string[];
}

/** The problems found, one line each naming the topic and both values; empty when all is well. */
export async function topicDurabilityProblems(
  connection: { brokers: string[]; topicPrefix?: string },
  topics: readonly string[],
  required: DurabilityRequirement,
): Promise<string[]> {
  const ns = new Namespace(connection.topicPrefix ?? '');
  const admin = new Kafka({ clientId: 'gm-durability-check', brokers: connection.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { metadata, resources } = await describeTopics(admin, topics.map((t) => ns.topic(t)));
    const problems: string[] = [];
    for (const topic of topics) {
      const name = ns.topic(topic);
      const partitions = metadata.find((t) => t.name === name)?.partitions ?? [];
      const replicas = partitions.length === 0 ? 0 : Math.min(...partitions.map((p) => p.replicas.length));
      if (replicas < required.replicationFactor) {
        problems.push(`${topic}: replication factor ${replicas}, below the required ${required.replicationFactor}`);
      }
      const config = new Map((resources.find((r) => r.resourceName === name)?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
      const minInsync = Number(config.get('min.insync.replicas') ?? '1');
      if (minInsync < required.minInsyncReplicas) {
        problems.push(`${topic}: min.insync.replicas ${minInsync}, below the required ${required.minInsyncReplicas}`);
      }
      if (required.keptForever.includes(topic)) {
        for (const key of ['retention.ms', 'retention.bytes']) {
          if (config.get(key) !== '-1') problems.push(`${topic}: ${key} ${config.get(key) ?? 'unknown'}, but a source of truth keeps every record (-1)`);
        }
      }
    }
    return problems;
  } finally {
    await admin.disconnect();
  }
}

/** Attempts, 100 ms apart and then longer, about 4.5 s in all. */
const UNKNOWN_TOPIC_ATTEMPTS = 10;

/**
 * The topics' partitions and settings. A topic created a moment ago (the start's ensureTopics)
 * can still be missing from the answering broker's metadata, which KRaft brokers learn
 * asynchronously: that answer is asked again for a few seconds, instead of failing the start.
 */
async function describeTopics(admin: Admin, names: string[]) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: names });
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: names.map((name) => ({ type: kafkajs.ConfigResourceTypes.TOPIC, name, configNames: ['min.insync.replicas', 'retention.ms', 'retention.bytes'] })),
      });
      return { metadata, resources };
    } catch (err) {
      if (attempt >= UNKNOWN_TOPIC_ATTEMPTS || (err as { type?: unknown }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw err;
      await delay(100 * attempt);
    }
  }
}
