/** What the gateway's real-Kafka specs share: a producer as platforms make one, and the cleanup of a spec's namespace. */
import { Kafka, Partitioners, logLevel, type Producer } from 'kafkajs';

/** An idempotent producer keyed by murmur2, as the example producer (and Java clients) partition. */
export async function specProducer(brokers: string[], clientId: string): Promise<Producer> {
  const producer = new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING })
    .producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  return producer;
}

/** Deletes every topic and consumer group of a spec's namespace. */
export async function deleteKafkaNamespace(brokers: string[], prefix: string): Promise<void> {
  const admin = new Kafka({ clientId: `${prefix}cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups);
  } finally {
    await admin.disconnect();
  }
}
