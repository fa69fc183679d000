import type { CopyErasureState } from '@gm/contracts';
/**
 * The key-value port: the subset of Redis the services need. The embedded adapter is SQLite;
 * the distributed one is Redis. Both must pass `testKeyValueStore` (packages/testing).
 * Typed repositories (records, tombstones, packets, caches, schedules, jobs) are built on top
 * of this port in this package, so both runtimes share their logic.
 *
 * Values are strings (callers store JSON). Keys with a TTL vanish once it passes: get,
 * exists, members and scans never return them.
 */
/** One write of a `pipeline`: the arguments of the method of the same name. */
export type KvWrite =
  | { op: 'set'; key: string; value: string; ttlMs?: number; nx?: boolean }
  | { op: 'setIfVersionAtLeast'; key: string; value: string; version: number }
  | { op: 'del'; keys: string[] }
  | { op: 'sadd'; key: string; members: string[] }
  | { op: 'srem'; key: string; members: string[] }
  | { op: 'zadd'; key: string; score: number; member: string }
  | { op: 'zrem'; key: string; members: string[] }
  /**
   * `by` (default 1): a positive integer. `ttlMs`: the lifetime of a key this increment creates
   * (a counter per time window that cleans itself up); an existing key keeps its own, as with INCR.
   */
  | { op: 'incr'; key: string; by?: number; ttlMs?: number };

/** What each write of a pipeline returned, as its method would (zadd: null). */
export type KvWriteResult = boolean | number | null;

export interface KeyValueStore {
  /**
   * Runs the writes in order in one round trip — Redis: one pipeline (scripts by EVALSHA);
   * SQLite: one transaction — and returns each one's result, in order. Arguments are checked
   * before anything runs (a bad one writes nothing). Not atomic on Redis: a failure part-way
   * leaves the earlier writes applied, so it is for idempotent writes a caller repeats whole
   * (a consumer's batch, retried by the bus). Keyed like every other method.
   */
  pipeline(writes: readonly KvWrite[]): Promise<KvWriteResult[]>;
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
  /** Members with min <= score <= max, descending by score then member (the reverse of `zrangeByScore`), at most `limit`. */
  zrevrangeByScore(key: string, max: number, min: number, limit: number): Promise<Array<{ member: string; score: number }>>;
  /** Every live key starting with `prefix`, sorted. */
  keys(prefix: string): Promise<string[]>;
  /** Atomic integer increment; returns the new value. */
  incr(key: string): Promise<number>;
  ping(): Promise<boolean>;
  /**
   * After deletions: makes their bytes physically gone where the store can, and says what is
   * true of them (§8.4): SQLite checkpoints and truncates its WAL (secure_delete zeroed the rows);
   * Redis rewrites its AOF/RDB files (`memory_only`
   * when it cannot).
   */
  eraseDeleted(): Promise<CopyErasureState>;
  close(): Promise<void>;
}
