import type { WrappedKey } from './keys.ts';

/** What the store knows of a key id. `destroyed` is final: the old value is never returned again. */
export type KeyLookup =
  | { status: 'present'; wrapped: WrappedKey }
  | { status: 'destroyed' }
  | { status: 'missing' };

/**
 * Where a destroyed key's old bytes may still be once `tombstone` returned: what the `key`
 * target's evidence reports (design §8.5).
 * - `none`: nowhere in the store's files (SQLite: secure_delete zeroed the old row, and a
 *   TRUNCATE checkpoint emptied the WAL that still held it — `checkpoints` says how many it took).
 * - `until_compaction`: the log still holds the old record until compaction drops it (the
 *   compacted `memory.keys`: within `max.compaction.lag.ms`, 1 h).
 */
export interface TombstoneOutcome {
  residue: 'none' | 'until_compaction';
  checkpoints?: number;
}

/**
 * The key store port: wrapped keys by key id. Embedded: a SQLite table; distributed: the
 * compacted topic `memory.keys`. Both must pass `testKeyStore` (packages/testing).
 *
 * Only the subject's single writer (write-admission owns a subject's partition) creates keys:
 * the store has no compare-and-set, and two KEKs raced in for one subject would leave the
 * loser's data keys unreadable.
 */
export interface KeyStore {
  /**
   * Stores or replaces (re-wrap on rotation) a wrapped key. Refuses with MEM_CONFLICT a key
   * id that was tombstoned, and with MEM_VALIDATION a value whose `kid` is not `keyId`.
   */
  put(keyId: string, wrapped: WrappedKey): Promise<void>;
  /**
   * `named`: something already written names the key (an envelope its data key, a data key its
   * KEK), so the key was stored before it; a store that follows a log may wait for that key to
   * arrive rather than read the log's end. Not for a look-up before creating a key.
   */
  get(keyId: string, options?: { named?: boolean }): Promise<KeyLookup>;
  /**
   * Destroys the key for good. Idempotent; also valid for an id never written (a subject
   * forgotten before its first write can then never get that KEK). Resolves only once the
   * destroy is as final as the store can make it, saying what is left.
   */
  tombstone(keyId: string): Promise<TombstoneOutcome>;
  /** Every present key (destroyed ones excluded), for master-key rotation and the open check. */
  all(): Promise<WrappedKey[]>;
  /**
   * Calls `listener` with each key id this instance learns was destroyed, by itself or (where
   * the adapter follows the shared log) by another instance. Returns an unsubscribe function.
   */
  onDestroyed(listener: (keyId: string) => void): () => void;
  close(): Promise<void>;
}
