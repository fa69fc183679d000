/**
 * How every embedded adapter opens its SQLite file: write-ahead logging (readers never block the
 * writer, and erasure checkpoints the log, sqlite-erasure.ts), the durability the file's role
 * asks for, a busy wait for other processes, and the file's per-process write lock
 * (file-write-locks.ts).
 */
import Database from 'better-sqlite3';
import { fileWriteLock } from './file-write-locks.ts';
import { applySecureDelete } from './sqlite-erasure.ts';
import type { ThreadLock } from './thread-lock.ts';

/** Another process (memctl, a second runtime) may hold the file's write lock briefly: wait instead of failing. */
const BUSY_TIMEOUT_MS = 5000;

export interface OpenSqliteOptions {
  /**
   * FULL for a file that is a source of truth (the log, the keys). NORMAL for a projection that
   * `memctl replay` rebuilds from the log: in WAL mode a committed transaction survives a process
   * crash (kill -9), and only an OS crash or power loss can drop the last few, like Redis with
   * appendfsync everysec. FULL there cost ~1.5 ms per write and doubled search latency.
   */
  synchronous: 'FULL' | 'NORMAL';
  /** secure_delete for this connection (sqlite-erasure.ts); SQLite's default when not given. */
  secureDelete?: boolean;
  /** The page cache in KiB; SQLite's default (2 MiB) when not given. */
  cacheKiB?: number;
}

export interface SqliteFile {
  db: Database.Database;
  /** Taken around each write by this process's threads; none for `:memory:`. */
  writeLock: ThreadLock | undefined;
  /** The journal mode SQLite agreed to: `wal`, or `memory` for `:memory:`. */
  journalMode: string;
}

export function openSqlite(file: string, options: OpenSqliteOptions): SqliteFile {
  const db = new Database(file);
  const writeLock = fileWriteLock(file);
  const journalMode = String(db.pragma('journal_mode = WAL', { simple: true }));
  db.pragma(`synchronous = ${options.synchronous}`);
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  if (options.cacheKiB !== undefined) db.pragma(`cache_size = -${options.cacheKiB}`);
  if (options.secureDelete !== undefined) applySecureDelete(db, options.secureDelete);
  return { db, writeLock, journalMode };
}
