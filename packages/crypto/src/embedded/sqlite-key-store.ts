import { openSqlite, underLock } from '@gm/thread-lock';
import { GovernedMemoryError } from '@gm/contracts';
import { WrappedKey } from '../keys.ts';
import type { KeyLookup, KeyStore } from '../key-store.ts';
import { checkPut, Listeners } from '../key-store-shared.ts';

export interface SqliteKeyStoreOptions {
  /** Database file, created if missing; `:memory:` for a store that lives with the process. */
  file: string;
  /**
   * `FULL` (default): every put is on disk when it returns. `NORMAL`: only for a store that
   * shares its WAL with a log committed with `FULL` right after each put (the embedded runtime's
   * bus.db): that commit's fsync of the WAL also makes every earlier frame durable, keys
   * included, so a key is never lost while an event sealed with it survives — one fsync per
   * write instead of two.
   */
  synchronous?: 'FULL' | 'NORMAL';
}

/*
 * A destroyed key keeps its row with a NULL value: the row is what makes `destroyed` final
 * (a later put is refused). secure_delete zeroes the freed bytes of the old value inside the
 * file, and a TRUNCATE checkpoint after each tombstone drops the WAL frames that still held it.
 */
/** Checkpoints a tombstone tries (10, 20, 40, 80 ms apart) before it reports the WAL still pinned. */
const CHECKPOINT_ATTEMPTS = 5;
const CHECKPOINT_RETRY_MS = 10;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS crypto_keys (
  key_id TEXT PRIMARY KEY,
  value TEXT
) WITHOUT ROWID;
`;

export function createSqliteKeyStore(options: SqliteKeyStoreOptions): KeyStore {
  // FULL unless the caller shares a FULL-committed WAL (see the option): a lost key write is lost
  // content, not a rebuildable projection.
  const { db, writeLock } = openSqlite(options.file, { synchronous: options.synchronous ?? 'FULL', secureDelete: true });
  db.exec(SCHEMA);

  const select = db.prepare<[string], { value: string | null }>('SELECT value FROM crypto_keys WHERE key_id = ?');
  const upsert = db.prepare<[string, string]>(
    'INSERT INTO crypto_keys (key_id, value) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET value = excluded.value',
  );
  const destroy = db.prepare<[string]>(
    'INSERT INTO crypto_keys (key_id, value) VALUES (?, NULL) ON CONFLICT (key_id) DO UPDATE SET value = NULL',
  );
  const present = db.prepare<[], { value: string }>('SELECT value FROM crypto_keys WHERE value IS NOT NULL ORDER BY key_id');
  const listeners = new Listeners();
  let closed = false;

  const ensureOpen = (): void => {
    if (closed) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'key store is closed');
  };

  /**
   * The puts of one turn of the event loop go in one transaction (a batch's new records create
   * their data keys together): each is refused on its own if its key was destroyed.
   */
  const queued: Array<{ keyId: string; value: string; resolve(): void; reject(err: unknown): void }> = [];
  const putAll = db.transaction((puts: typeof queued): Array<GovernedMemoryError | undefined> => puts.map(({ keyId, value }) => {
    const row = select.get(keyId);
    if (row !== undefined && row.value === null) {
      return new GovernedMemoryError('MEM_CONFLICT', `key ${keyId} was destroyed and cannot be written again`);
    }
    upsert.run(keyId, value);
    return undefined;
  }));
  const flush = (): void => {
    const puts = queued.splice(0);
    if (puts.length === 0) return;
    let refused: Array<GovernedMemoryError | undefined>;
    try {
      refused = underLock(writeLock, () => putAll.immediate(puts));
    } catch (err) {
      for (const put of puts) put.reject(err);
      return;
    }
    puts.forEach((put, i) => {
      const err = refused[i];
      if (err === undefined) put.resolve();
      else put.reject(err);
    });
  };

  return {
    async put(keyId, wrapped) {
      ensureOpen();
      const value = JSON.stringify(checkPut(keyId, wrapped));
      return new Promise<void>((resolve, reject) => {
        if (queued.push({ keyId, value, resolve, reject }) === 1) setImmediate(flush);
      });
    },
    async get(keyId): Promise<KeyLookup> {
      ensureOpen();
      const row = select.get(keyId);
      if (row === undefined) return { status: 'missing' };
      if (row.value === null) return { status: 'destroyed' };
      return { status: 'present', wrapped: WrappedKey.parse(JSON.parse(row.value)) };
    },
    async tombstone(keyId) {
      ensureOpen();
      underLock(writeLock, () => destroy.run(keyId));
      listeners.emit(keyId);
      // Another connection (the other thread's) may be reading: while it pins the WAL, the
      // checkpoint cannot empty it, frames with the old value remain, and the destroy must not
      // count as done. Readers are short, so it is retried here a few times before the caller
      // (the deletion's key target) is told to retry.
      for (let checkpoints = 1; ; checkpoints += 1) {
        const [result] = underLock(writeLock, () => db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number }>);
        // log -1: not in WAL mode (a `:memory:` store), so there is no WAL to hold anything.
        if (result !== undefined && result.busy === 0 && (result.log === 0 || result.log === -1)) return { residue: 'none', checkpoints };
        if (checkpoints >= CHECKPOINT_ATTEMPTS) {
          throw new GovernedMemoryError('MEM_UNAVAILABLE', `key ${keyId} is destroyed, but the WAL still holds its old frames after ${checkpoints} checkpoints; retry`, { retriable: true });
        }
        await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_RETRY_MS * 2 ** (checkpoints - 1)));
        ensureOpen();
      }
    },
    async all() {
      ensureOpen();
      return present.all().map((row) => WrappedKey.parse(JSON.parse(row.value)));
    },
    onDestroyed: (listener) => listeners.add(listener),
    async close() {
      if (closed) return;
      // Puts already made are written before the connection goes.
      flush();
      closed = true;
      listeners.clear();
      db.close();
    },
  };
}
