/**
 * One ThreadLock per database file, per process: every SQLite adapter takes its file's lock
 * around each write, so threads of this process writing the same file queue here rather than
 * in SQLite's busy handler (thread-lock.ts). Other processes on the file still meet SQLite's
 * own locking.
 *
 * The registry is this thread's; a thread that opens the same files must adopt the opener's
 * locks first (`shareFileWriteLocks` → `adoptFileWriteLocks`), or it would lock on its own.
 */
import { resolve } from 'node:path';
import { ThreadLock } from './thread-lock.ts';

const locks = new Map<string, ThreadLock>();

/** The lock of a database file (created on first use); `:memory:` databases are private to their connection and get none. */
export function fileWriteLock(file: string): ThreadLock | undefined {
  if (file === ':memory:' || file === '') return undefined;
  const path = resolve(file);
  let lock = locks.get(path);
  if (lock === undefined) {
    lock = new ThreadLock();
    locks.set(path, lock);
  }
  return lock;
}

/** This thread's locks, to hand to a thread that will open the same files. */
export function shareFileWriteLocks(): Array<[string, SharedArrayBuffer]> {
  return [...locks].map(([path, lock]) => [path, lock.shared]);
}

/** Takes over another thread's locks; call before opening any of their files. */
export function adoptFileWriteLocks(shared: ReadonlyArray<readonly [string, SharedArrayBuffer]>): void {
  for (const [path, buffer] of shared) locks.set(path, new ThreadLock(buffer));
}

/** Runs a synchronous write under the file's lock, or bare when the file has none. */
export function underLock<T>(lock: ThreadLock | undefined, work: () => T): T {
  return lock === undefined ? work() : lock.run(work);
}
