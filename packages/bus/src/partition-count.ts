/**
 * A topic's partition count fixes which partition every key lands on, so it can never change
 * under a running deployment: a larger count would remap subjects (breaking per-subject order
 * and the co-partitioning of commands and events), and Kafka cannot shrink one. ensureTopics
 * therefore refuses a spec whose count differs from an existing topic's, and services exit 2.
 */
export class PartitionCountMismatchError extends Error {
  readonly code = 'BUS_PARTITION_COUNT_MISMATCH';

  constructor(
    readonly topic: string,
    readonly existing: number,
    readonly wanted: number,
  ) {
    super(
      `topic "${topic}" has ${existing} partitions, but ${wanted} were asked for (MEMORY_PARTITIONS): ` +
        'partition counts are fixed per deployment; start with the count the topics were created with',
    );
    this.name = 'PartitionCountMismatchError';
  }
}

export const isPartitionCountMismatch = (err: unknown): err is PartitionCountMismatchError => err instanceof PartitionCountMismatchError;
