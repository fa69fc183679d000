import { TOPICS } from '@gm/contracts';
import type { TopicSpec } from './port.ts';

/**
 * Every topic of design §4 with one partition count: commands and events must be
 * co-partitioned (same key, same count), so one write-admission partition owns a subject.
 */
export function memoryTopicSpecs(partitions: number): TopicSpec[] {
  return [
    { name: TOPICS.commands, partitions },
    { name: TOPICS.events, partitions },
    { name: TOPICS.replies, partitions },
    { name: TOPICS.records, partitions, compacted: true },
    { name: TOPICS.policyChanges, partitions },
    { name: TOPICS.deletionTasks, partitions },
    { name: TOPICS.deletionAcks, partitions },
    { name: TOPICS.deletionReceipts, partitions },
  ];
}
