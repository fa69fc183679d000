import { GovernedMemoryError } from '@gm/contracts';
import type { Bus } from './port.ts';

/** Per partition, the messages a topic holds past a group's committed offset (0 when it committed everything). */
export async function groupLag(bus: Pick<Bus, 'endOffsets' | 'committedOffsets'>, groupId: string, topic: string): Promise<number[]> {
  const [ends, committed] = await Promise.all([bus.endOffsets(topic), bus.committedOffsets(groupId, topic)]);
  return ends.map((end, partition) => Math.max(0, end - (committed[partition] ?? 0)));
}

/**
 * Returns once `groupId` has committed everything `topic` held when it was called, waiting up to
 * `timeoutMs`; past that it throws a retriable MEM_UNAVAILABLE, so the bus retries the message
 * for as long as the group lags and never dead-letters it. A deletion target whose copy another
 * group writes waits for it (design §8.2): the copy that group was still writing from events
 * before the job's tombstones would otherwise land after the target removed it.
 */
export async function awaitGroupCaughtUp(
  bus: Pick<Bus, 'endOffsets' | 'waitForCommitted'>, groupId: string, topic: string, timeoutMs: number,
): Promise<void> {
  const ends = await bus.endOffsets(topic);
  const passed = await Promise.all(ends.map((end, partition) => (end === 0
    ? true
    : bus.waitForCommitted(groupId, { topic, partition, offset: end - 1 }, timeoutMs))));
  if (!passed.every(Boolean)) {
    throw new GovernedMemoryError('MEM_UNAVAILABLE', `consumer group ${groupId} has not caught up with ${topic} yet`, { retriable: true });
  }
}
