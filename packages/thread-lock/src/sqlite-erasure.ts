/**
 * Erasure that is physically true in the embedded runtime's SQLite files (design §8.4), shared by
 * every SQLite adapter that holds content or what derives from it. With `secure_delete` on,
 * SQLite overwrites a deleted row's bytes in the page instead of leaving them in free space; the
 * write-ahead log still holds the page images written before, until a TRUNCATE checkpoint copies
 * the log into the file and cuts it to nothing.
 */
import type { ThreadLock } from './thread-lock.ts';
import { underLock } from './file-write-locks.ts';

/** A better-sqlite3 connection, as far as this module needs one. */
interface Pragmas {
  pragma(source: string, options?: { simple?: boolean }): unknown;
}

/** What is true of a file's deleted bytes after `truncateWal` (the receipt's CopyErasureState values). */
export type SqliteErasure = 'erased' | 'pending_compaction';

/** secure_delete for this connection (it is a per-connection setting). */
export function applySecureDelete(db: Pragmas, on: boolean): void {
  db.pragma(`secure_delete = ${on ? 'ON' : 'OFF'}`);
}

/**
 * Checkpoints the file's WAL and truncates it. `erased` only when secure_delete is on and the
 * checkpoint went through to an empty log; a reader holding the log (past the busy timeout) or
 * secure_delete off leave the bytes in a file until later: `pending_compaction`.
 */
export function truncateWal(db: Pragmas, lock: ThreadLock | undefined, secureDelete: boolean): SqliteErasure {
  // Without secure_delete the file keeps the bytes anyway: no checkpoint is worth its cost then.
  if (!secureDelete) return 'pending_compaction';
  const [result] = underLock(lock, () => db.pragma('wal_checkpoint(TRUNCATE)')) as Array<{ busy: number; log: number }>;
  return result !== undefined && result.busy === 0 && result.log === 0 ? 'erased' : 'pending_compaction';
}
