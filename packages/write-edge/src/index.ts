/**
 * The edge of a write (§5.2, §5.3), shared by every way in: the HTTP API (retrieval-broker) and
 * Kafka-native ingest (ingest-gateway) admit a write under exactly the same rules.
 */
export * from './parse.ts';
export * from './metadata.ts';
export * from './prepare-write.ts';
export * from './admit-writes.ts';
export * from './claim-ids.ts';
export * from './capability.ts';
export * from './authority.ts';
