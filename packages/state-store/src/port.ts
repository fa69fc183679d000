/**
 * The key-value port: the subset of Redis the services need. The embedded adapter is SQLite;
 * the distributed one is Redis. Both must pass `testKeyValueStore` (packages/testing).
 * Typed repositories (records, tombstones, packets, caches, schedules, jobs) are built on top
 * of this port in this package, so both runtimes share their logic.
 *
 * Values are strings (callers store JSON). Keys with a TTL vanish once it passes: get,
 * exists, members and scans never return them.
 */
export interface KeyValueStore {
  get(key: string): Promise<string | null>;
  mget(keys: string[]): Promise<Array<string | null>>;
  /** `nx`: only if absent; returns false when not set. `ttlMs`: expire after. */
  set(key: string, value: string, options?: { ttlMs?: number; nx?: boolean }): Promise<boolean>;
  /**
   * Atomic check-and-set for versioned JSON values: writes when the key is absent or its
   * stored JSON has a numeric `version` field lower than or equal to `version`. Returns whether it wrote.
   */
  setIfVersionAtLeast(key: string, value: string, version: number): Promise<boolean>;
  del(keys: string[]): Promise<number>;
  exists(keys: string[]): Promise<number>;
  /** Sets */
  sadd(key: string, members: string[]): Promise<number>;
  srem(key: string, members: string[]): Promise<number>;
  smembers(key: string): Promise<string[]>;
  /** Sorted sets (score = number) */
  zadd(key: string, score: number, member: string): Promise<void>;
  zrem(key: string, members: string[]): Promise<number>;
  /** Members with min <= score <= max, ascending by score then member, at most `limit`. */
  zrangeByScore(key: string, min: number, max: number, limit: number): Promise<Array<{ member: string; score: number }>>;
  /** Every live key starting with `prefix`, sorted. */
  keys(prefix: string): Promise<string[]>;
  /** Atomic integer increment; returns the new value. */
  incr(key: string): Promise<number>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
