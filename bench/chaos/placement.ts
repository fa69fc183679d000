/**
 * Which broker to fail: the one that leads most partitions of memory.commands and memory.events
 * and coordinates most of write-admission's transactions — the broker whose loss hurts the
 * write path most (docs/reliability.md "The fault suite").
 */
import { Kafka, logLevel } from 'kafkajs';
import { CONSUMER_GROUPS, TOPICS } from '@gm/contracts';

export interface BrokerRole {
  nodeId: number;
  /** Partitions of memory.commands and memory.events it leads. */
  leads: number;
  /** write-admission transactional ids whose coordinator it is. */
  coordinates: number;
}

/** Java's String.hashCode, as Kafka computes a transactional id's coordinator partition. */
function javaHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i += 1) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** Kafka's Utils.abs(hash) % partitions (TransactionStateManager.partitionFor). */
const coordinatorPartition = (transactionalId: string, partitions: number): number => {
  const h = javaHash(transactionalId);
  return (h === -2147483648 ? 0 : Math.abs(h)) % partitions;
};

/** Every broker's share of the write path, most first. */
export async function writePathRoles(brokers: string[], namespace: string): Promise<BrokerRole[]> {
  const admin = new Kafka({ clientId: 'gm-chaos-placement', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const roles = new Map<number, BrokerRole>();
    const role = (nodeId: number) => roles.get(nodeId) ?? roles.set(nodeId, { nodeId, leads: 0, coordinates: 0 }).get(nodeId) as BrokerRole;
    for (const b of (await admin.describeCluster()).brokers) role(b.nodeId);
    const topic = (name: string) => (namespace ? `${namespace}.${name}` : name);
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic(TOPICS.commands), topic(TOPICS.events), '__transaction_state'] });
    const commands = topics.find((t) => t.name === topic(TOPICS.commands));
    for (const t of topics.filter((t) => t.name !== '__transaction_state')) {
      for (const p of t.partitions) role(p.leader).leads += 1;
    }
    const state = topics.find((t) => t.name === '__transaction_state');
    if (state !== undefined && commands !== undefined) {
      // The id write-admission's consumer of each memory.commands partition uses (kafka-subscription.ts).
      const prefix = namespace ? `gm.${namespace}` : 'gm';
      const group = namespace ? `${namespace}.${CONSUMER_GROUPS.writeAdmission}` : CONSUMER_GROUPS.writeAdmission;
      for (const p of commands.partitions) {
        const at = coordinatorPartition(`${prefix}.${group}.${commands.name}.${p.partitionId}`, state.partitions.length);
        const leader = state.partitions.find((s) => s.partitionId === at)?.leader;
        if (leader !== undefined) role(leader).coordinates += 1;
      }
    }
    return [...roles.values()].sort((a, b) => b.leads + b.coordinates - (a.leads + a.coordinates));
  } finally {
    await admin.disconnect();
  }
}
