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

/** How many times a checkpoint is tried, each waiting at most BUSY_MS for readers, before it says `pending_compaction`. */
const ATTEMPTS = 8;
const BUSY_MS = 100;

/**
 * Checkpoints the file's WAL and truncates it. `erased` only when secure_delete is on and the
 * checkpoint went through to an empty log; secure_delete off, or readers holding the log through
 * every attempt, leave the bytes in a file until a later checkpoint: `pending_compaction`. Each
 * attempt waits for readers briefly and holds the file's write lock only that long: a TRUNCATE
 * checkpoint blocks every writer while it waits, and readers come and go all the time.
 */
export async function truncateWal(db: Pragmas, lock: ThreadLock | undefined, secureDelete: boolean): Promise<SqliteErasure> {
  // Without secure_delete the file keeps the bytes anyway: no checkpoint is worth its cost then.
  if (!secureDelete) return 'pending_compaction';
  const busyTimeout = Number(db.pragma('busy_timeout', { simple: true }));
  for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
    db.pragma(`busy_timeout = ${BUSY_MS}`);
    try {
      const [result] = underLock(lock, () => db.pragma('wal_checkpoint(TRUNCATE)')) as Array<{ busy: number; log: number }>;
      if (result !== undefined && result.busy === 0 && result.log === 0) return 'erased';
    } finally {
      db.pragma(`busy_timeout = ${busyTimeout}`);
    }
    // Let the readers in this and the other threads finish before the next attempt.
    await new Promise((resolve) => setTimeout(resolve, BUSY_MS * attempt));
  }
  return 'pending_compaction';
}
