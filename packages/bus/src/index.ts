export * from './port.ts';
export { createSqliteBus, type SqliteBusOptions, type BusLogger } from './embedded/sqlite-bus.ts';
export { partitionForKey, murmur2 } from './embedded/partitioner.ts';
export { memoryTopicSpecs, keysTopicSpec, KEYS_TOPIC_CONFIG, INGEST_RETENTION_MS } from './topics.ts';
export { createKafkaBus, type KafkaBusOptions } from './kafka/kafka-bus.ts';
export { PartitionCountMismatchError, isPartitionCountMismatch } from './partition-count.ts';
export { groupLag } from './lag.ts';
export { subscribeToMemoryEvents, subscribeToMemoryEventBatches, type EventInBatch } from './memory-events.ts';
export { meteredBus } from './metered-bus.ts';
