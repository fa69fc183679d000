/**
 * Which consumer groups of a deployment have live members, from the group coordinator itself:
 * what an offline tool (a rebuild from the log) asks before it touches the state those groups
 * write. A group that never existed, or whose members all left, has none.
 */
import { Kafka, logLevel } from 'kafkajs';
import { Namespace } from './kafka-codec.ts';

export interface GroupMembers {
  /** The port's group id (without the namespace prefix). */
  groupId: string;
  /** The coordinator's state (`Stable`, `PreparingRebalance`, …). */
  state: string;
  members: number;
}

/** The groups of `groupIds` that have at least one member, with their state and member count. */
export async function groupsWithMembers(connection: { brokers: string[]; topicPrefix?: string }, groupIds: readonly string[]): Promise<GroupMembers[]> {
  const ns = new Namespace(connection.topicPrefix ?? '');
  const admin = new Kafka({ clientId: 'gm-group-check', brokers: connection.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups(groupIds.map((g) => ns.group(g)));
    return groupIds.flatMap((groupId) => {
      const described = groups.find((g) => g.groupId === ns.group(groupId));
      if (described === undefined || described.members.length === 0) return [];
      return [{ groupId, state: described.state, members: described.members.length }];
    });
  } finally {
    await admin.disconnect();
  }
}
