export * from './errors.ts';
export * from './envelope.ts';
export * from './keys.ts';
export * from './key-store.ts';
export * from './keyring.ts';
export * from './master-keys.ts';
export { createSqliteKeyStore, type SqliteKeyStoreOptions } from './embedded/sqlite-key-store.ts';
export { openBusKeyStore, KEYS_TOPIC, keysTopicSpec, type BusKeyStoreOptions } from './kafka/bus-key-store.ts';
