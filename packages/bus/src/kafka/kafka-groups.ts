/**
 * Consumer group offsets through the admin client, in the port's terms: a partition the group
 * never committed reads 0 (Kafka says -1), and resetting a group deletes it, which Kafka
 * refuses while it has members.
 */
import type { Admin } from 'kafkajs';
import { retryWithin, unavailable } from './kafka-codec.ts';

const NON_EMPTY_GROUP = 68;
const GROUP_ID_NOT_FOUND = 69;
/**
 * The group's coordinator is loading its offsets partition, moving, or not elected yet (a broker
 * just started, failed over, or is slow): kafkajs gives up on these per-group errors of
 * DeleteGroups at once, though the next attempt usually succeeds.
 */
const COORDINATOR_BUSY = new Set([14, 15, 16]); // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
/** How long a delete keeps asking a busy coordinator: about the time a coordinator takes to move. */
const COORDINATOR_WAIT_MS = 10_000;

export class Groups {
  constructor(private readonly admin: () => Promise<Admin>) {}

  /**
   * Committed offsets by partition; -1 where the group has none. A coordinator that moved or is
   * loading (a broker died) answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, which
   * kafkajs's fetchOffsets passes on at once: asked again (each ask finds the coordinator anew)
   * for as long as a coordinator takes to move, then MEM_UNAVAILABLE — a 503, never a 500.
   */
  async committed(kafkaGroup: string, kafkaTopic: string): Promise<Map<number, number>> {
    try {
      const [topic] = await retryWithin(COORDINATOR_WAIT_MS, async () => (await this.admin()).fetchOffsets({ groupId: kafkaGroup, topics: [kafkaTopic] }));
      return new Map((topic?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    } catch (err) {
      throw unavailable(`committed offsets of ${kafkaGroup}`, err);
    }
  }

  /** The port's committed offset of one partition: 0 when none. */
  async committedOffset(kafkaGroup: string, kafkaTopic: string, partition: number): Promise<number> {
    return Math.max(0, (await this.committed(kafkaGroup, kafkaTopic)).get(partition) ?? 0);
  }

  /** True when no member is in the group (or it does not exist). */
  async idle(kafkaGroup: string): Promise<boolean> {
    const { groups } = await (await this.admin()).describeGroups([kafkaGroup]);
    const state = groups[0]?.state ?? 'Dead';
    return state === 'Empty' || state === 'Dead';
  }

  /** Deletes the group and its offsets: 'busy' when it has members, 'done' otherwise. */
  async delete(kafkaGroup: string): Promise<'done' | 'busy'> {
    const deadline = performance.now() + COORDINATOR_WAIT_MS;
    for (let wait = 100; ; wait = Math.min(wait * 2, 2_000)) {
      try {
        await (await this.admin()).deleteGroups([kafkaGroup]);
        return 'done';
      } catch (err) {
        const codes = groupErrorCodes(err);
        if (codes.includes(NON_EMPTY_GROUP)) return 'busy';
        if (codes.length > 0 && codes.every((code) => code === GROUP_ID_NOT_FOUND)) return 'done';
        const coordinatorBusy = codes.length > 0 && codes.every((code) => COORDINATOR_BUSY.has(code) || code === GROUP_ID_NOT_FOUND);
        if (!coordinatorBusy || performance.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}

/**
 * The per-group error codes of a failed DeleteGroups (kafkajs's KafkaJSDeleteGroupsError,
 * whose class is not importable by name from ESM, so it is recognised by its shape).
 */
function groupErrorCodes(err: unknown): number[] {
  if (!(err instanceof Error) || !('groups' in err) || !Array.isArray(err.groups)) return [];
  return err.groups.map((g: unknown) => (typeof g === 'object' && g !== null && 'errorCode' in g && typeof g.errorCode === 'number' ? g.errorCode : -1));
}
