/**
 * The deployment's consumer lag as an SRE reads it: for every consumer group of the namespace,
 * the messages past its committed offsets, summed. A transaction's commit marker takes an
 * offset that no consumer commits past until the next message, so an idle group can stay one
 * behind per partition: "drained" is judged against the lag of the same deployment at rest.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';

export interface LagProbe {
  total(): Promise<number>;
  close(): Promise<void>;
}

export async function openLagProbe(brokers: string[], namespace: string): Promise<LagProbe> {
  const admin: Admin = new Kafka({ clientId: 'gm-chaos-lag', brokers, logLevel: logLevel.NOTHING, requestTimeout: 5_000 }).admin();
  await admin.connect();
  return {
    async total() {
      const { groups } = await admin.listGroups();
      const ours = groups.map((g) => g.groupId).filter((g) => g.startsWith(`${namespace}.`));
      const ends = new Map<string, Map<number, number>>();
      const endsOf = async (topic: string) => {
        let perPartition = ends.get(topic);
        if (perPartition === undefined) {
          perPartition = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.offset)]));
          ends.set(topic, perPartition);
        }
        return perPartition;
      };
      let lag = 0;
      for (const groupId of ours) {
        for (const { topic, partitions } of await admin.fetchOffsets({ groupId })) {
          const end = await endsOf(topic);
          for (const p of partitions) {
            const committed = Number(p.offset);
            if (committed >= 0) lag += Math.max(0, (end.get(p.partition) ?? 0) - committed);
          }
        }
      }
      return lag;
    },
    close: () => admin.disconnect(),
  };
}
