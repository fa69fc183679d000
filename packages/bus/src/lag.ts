import type { Bus } from './port.ts';

/** Per partition, the messages a topic holds past a group's committed offset (0 when it committed everything). */
export async function groupLag(bus: Pick<Bus, 'endOffsets' | 'committedOffsets'>, groupId: string, topic: string): Promise<number[]> {
  const [ends, committed] = await Promise.all([bus.endOffsets(topic), bus.committedOffsets(groupId, topic)]);
  return ends.map((end, partition) => Math.max(0, end - (committed[partition] ?? 0)));
}
