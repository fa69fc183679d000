export * from './port.ts';
export { createSqliteKeyValueStore } from './embedded/sqlite-key-value.ts';
export { createRedisKeyValueStore } from './redis/redis-key-value.ts';
export * from './state.ts';
export { KeySpace } from './repositories/keys.ts';
export type { ScheduledExpiry } from './repositories/schedule.ts';
export type { StoredPacket } from './repositories/packets.ts';
export type { AppliedChange, IssuedCapability } from './repositories/policies.ts';
export { recordRef } from './repositories/records.ts';
