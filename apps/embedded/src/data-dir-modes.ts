/**
 * The data directory is its owner's only (design §8.5): its files hold content in clear (the
 * state store's copies, the index, the summaries), so the directory is 0700 and every file 0600,
 * whatever the umask — on a fresh directory and on one made before this rule, at every start.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const DIRECTORY_MODE = 0o700;
const FILE_MODE = 0o600;

/**
 * What the runtime writes in a data directory: only these are made owner-only, so a directory
 * that also holds someone else's files (a mistaken MEMORY_DATA_DIR) has nothing else changed.
 */
const OURS = /^(?:(?:bus|state|index|vectors|summaries)\.db(?:-wal|-shm|-journal)?|issuer-credential|runtime\.lock|service-address\.json|keys)$/;

/** Makes `dir` and what the runtime keeps in it owner-only, creating `dir` when missing. */
export function ownerOnly(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: DIRECTORY_MODE });
  chmodSync(dir, DIRECTORY_MODE);
  for (const name of readdirSync(dir)) if (OURS.test(name)) restrict(path.join(dir, name));
}

function restrict(entry: string): void {
  const stat = statSync(entry, { throwIfNoEntry: false });
  if (stat === undefined) return;
  if (stat.isDirectory()) {
    chmodSync(entry, DIRECTORY_MODE);
    for (const name of readdirSync(entry)) restrict(path.join(entry, name));
  } else if (stat.isFile() && (stat.mode & 0o777) !== FILE_MODE) {
    chmodSync(entry, FILE_MODE);
  }
}

/**
 * Creates a database file owner-only before SQLite opens it: SQLite gives its -wal and -shm
 * files the database file's mode, so they are born 0600 too.
 */
export function ownerOnlyFile(file: string): string {
  if (!existsSync(file)) closeSync(openSync(file, 'a', FILE_MODE));
  chmodSync(file, FILE_MODE);
  return file;
}
