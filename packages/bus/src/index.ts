export * from './port.ts';
export type { BusLogger } from './bus-logger.ts';
export { createSqliteBus, type SqliteBusOptions } from './embedded/sqlite-bus.ts';
export { partitionForKey, murmur2 } from './partitioner.ts';
export { memoryTopicSpecs, keysTopicSpec, KEYS_TOPIC_CONFIG, INGEST_RETENTION_MS } from './topics.ts';
export { createKafkaBus, type KafkaBusOptions } from './kafka/kafka-bus.ts';
export { PartitionCountMismatchError, isPartitionCountMismatch } from './partition-count.ts';
export { groupLag } from './lag.ts';
