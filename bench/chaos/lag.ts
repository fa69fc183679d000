/**
 * The deployment's consumer lag as an SRE reads it: for every consumer group of the namespace,
 * the messages past its committed offsets, summed. A transaction's commit marker takes an
 * offset that no consumer commits past until the next message, so an idle group can stay one
 * behind per partition: "drained" is judged against the lag of the same deployment at rest.
 *
 * The pipeline's groups (CONSUMER_GROUPS) always count. A process's own groups (its key-store
 * follower `gm-keys.<id>`, the broker's `retrieval-broker.replies.<instance>`) count while
 * they have members: one whose process was killed keeps its
 * offsets, and its lag, until Kafka expires them (docs/reliability.md).
 */
import { CONSUMER_GROUPS } from '@gm/contracts';
import { Kafka, logLevel, type Admin } from 'kafkajs';

const PIPELINE_GROUPS: ReadonlySet<string> = new Set(Object.values(CONSUMER_GROUPS));

export interface LagProbe {
  /** Per consumer group of the namespace (named without the namespace), the messages past its committed offsets. */
  byGroup(): Promise<Record<string, number>>;
  total(): Promise<number>;
  close(): Promise<void>;
}

export const sumOf = (byGroup: Record<string, number>): number => Object.values(byGroup).reduce((a, b) => a + b, 0);

export async function openLagProbe(brokers: string[], namespace: string): Promise<LagProbe> {
  const admin: Admin = new Kafka({ clientId: 'gm-chaos-lag', brokers, logLevel: logLevel.NOTHING, requestTimeout: 5_000 }).admin();
  await admin.connect();
  const probe: LagProbe = {
    async byGroup() {
      const { groups } = await admin.listGroups();
      const named = groups.map((g) => g.groupId).filter((g) => g.startsWith(`${namespace}.`));
      const own = named.filter((g) => !PIPELINE_GROUPS.has(g.slice(namespace.length + 1)));
      const live = own.length === 0 ? new Set<string>() : new Set((await admin.describeGroups(own)).groups.filter((g) => g.members.length > 0).map((g) => g.groupId));
      const ours = named.filter((g) => PIPELINE_GROUPS.has(g.slice(namespace.length + 1)) || live.has(g));
      const ends = new Map<string, Map<number, number>>();
      const endsOf = async (topic: string) => {
        let perPartition = ends.get(topic);
        if (perPartition === undefined) {
          perPartition = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.offset)]));
          ends.set(topic, perPartition);
        }
        return perPartition;
      };
      const lag: Record<string, number> = {};
      for (const groupId of ours) {
        let behind = 0;
        for (const { topic, partitions } of await admin.fetchOffsets({ groupId })) {
          const end = await endsOf(topic);
          for (const p of partitions) {
            const committed = Number(p.offset);
            if (committed >= 0) behind += Math.max(0, (end.get(p.partition) ?? 0) - committed);
          }
        }
        lag[groupId.slice(namespace.length + 1)] = behind;
      }
      return lag;
    },
    total: async () => sumOf(await probe.byGroup()),
    close: () => admin.disconnect(),
  };
  return probe;
}
