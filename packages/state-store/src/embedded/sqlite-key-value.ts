import { GovernedMemoryError } from '@gm/contracts';
import { openSqlite, truncateWal, underLock } from '@gm/thread-lock';
import { checkWrite } from '../pipeline.ts';
import type { KeyValueStore, KvWrite, KvWriteResult } from '../port.ts';

export interface SqliteKeyValueStoreOptions {
  /** Database file; created if missing. */
  file: string;
  /** Epoch-ms clock for TTLs; injectable so tests can travel in time. Default Date.now. */
  now?: () => number;
  /**
   * Erasure that is physically true (design §8.4): secure_delete, FTS5 secure-delete and a
   * TRUNCATE checkpoint in `eraseDeleted`. Default true; false only for the bench's A/B.
   */
  secureErasure?: boolean;
}

/*
 * One table per Redis type. A key lives in at most one of them, as in Redis: `set` replaces
 * whatever the key held, and other writes refuse a key of another type (WRONGTYPE), so code
 * that misuses a key fails here the same way it would against Redis.
 * Only strings can carry a TTL (the port offers none for sets and sorted sets).
 * Times are epoch-ms integers from the injected clock.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS strings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  expires_at INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS strings_expiry ON strings (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS sets (
  key TEXT NOT NULL,
  member TEXT NOT NULL,
  PRIMARY KEY (key, member)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS zsets (
  key TEXT NOT NULL,
  member TEXT NOT NULL,
  score REAL NOT NULL,
  PRIMARY KEY (key, member)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS zsets_by_score ON zsets (key, score, member);
`;

const LIVE = '(expires_at IS NULL OR expires_at > @now)';

/*
 * Prefix match by range plus an exact character comparison, not LIKE: LIKE treats % and _ as
 * wildcards and ignores ASCII case, both of which would leak neighbouring keys.
 */
const PREFIX = 'key >= @prefix AND substr(key, 1, length(@prefix)) = @prefix';

/*
 * The stored value's `version` must be a JSON number <= the offered one. CASE guarantees the
 * JSON functions only see valid JSON (they raise on anything else); a value without a numeric
 * version is never overwritten.
 */
const CAS_UPDATE = `
UPDATE strings SET value = @value, expires_at = NULL
WHERE key = @key AND CASE
  WHEN json_valid(value) THEN json_type(value, '$.version') IN ('integer', 'real')
    AND json_extract(value, '$.version') <= @version
  ELSE 0
END
`;

/** Expired strings removed per write, oldest first: reclaims space without a timer. */
const SWEEP_BATCH = 64;

type KeyType = 'string' | 'set' | 'zset' | 'none';

function wrongType(): GovernedMemoryError {
  return new GovernedMemoryError('MEM_INTERNAL', 'WRONGTYPE: the key holds a different kind of value');
}

export function createSqliteKeyValueStore(options: SqliteKeyValueStoreOptions): KeyValueStore {
  const clock = options.now ?? Date.now;
  const secureErasure = options.secureErasure ?? true;
  const { db, writeLock } = openSqlite(options.file, {
    // A projection: `memctl replay` rebuilds it from the log (bus.db, FULL).
    synchronous: 'NORMAL',
    secureDelete: secureErasure,
    // Up to 64 MiB of pages in memory (the default is 2 MiB): the read path touches the record
    // hash, tombstones and content copies of every hit, and the cache and packet indexes on each
    // search; with the default most of those lookups went to the OS (search p50 3.6 → 2.9 ms).
    cacheKiB: 65_536,
  });
  db.exec(SCHEMA);

  const getLive = db.prepare<[{ key: string; now: number }], { value: string }>(
    `SELECT value FROM strings WHERE key = @key AND ${LIVE}`,
  );
  const typeOf = db.prepare<[{ key: string; now: number }], { type: KeyType }>(`
    SELECT CASE
      WHEN EXISTS (SELECT 1 FROM strings WHERE key = @key AND ${LIVE}) THEN 'string'
      WHEN EXISTS (SELECT 1 FROM sets WHERE key = @key) THEN 'set'
      WHEN EXISTS (SELECT 1 FROM zsets WHERE key = @key) THEN 'zset'
      ELSE 'none'
    END AS type`);
  const purgeKey = db.prepare<[{ key: string; now: number }]>(
    'DELETE FROM strings WHERE key = @key AND expires_at <= @now',
  );
  const sweep = db.prepare<[{ now: number; batch: number }]>(`
    DELETE FROM strings WHERE key IN (
      SELECT key FROM strings WHERE expires_at <= @now ORDER BY expires_at LIMIT @batch
    )`);
  const putString = db.prepare<[{ key: string; value: string; expiresAt: number | null }]>(`
    INSERT INTO strings (key, value, expires_at) VALUES (@key, @value, @expiresAt)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`);
  const updateValueKeepTtl = db.prepare<[{ key: string; value: string }]>(
    'UPDATE strings SET value = @value WHERE key = @key',
  );
  const casUpdate = db.prepare<[{ key: string; value: string; version: number }]>(CAS_UPDATE);
  const delString = db.prepare<[string]>('DELETE FROM strings WHERE key = ?');
  const delSet = db.prepare<[string]>('DELETE FROM sets WHERE key = ?');
  const delZset = db.prepare<[string]>('DELETE FROM zsets WHERE key = ?');
  const addMember = db.prepare<[string, string]>('INSERT OR IGNORE INTO sets (key, member) VALUES (?, ?)');
  const remMember = db.prepare<[string, string]>('DELETE FROM sets WHERE key = ? AND member = ?');
  const members = db.prepare<[string], { member: string }>('SELECT member FROM sets WHERE key = ? ORDER BY member');
  const putScore = db.prepare<[string, string, number]>(`
    INSERT INTO zsets (key, member, score) VALUES (?, ?, ?)
    ON CONFLICT (key, member) DO UPDATE SET score = excluded.score`);
  const remScored = db.prepare<[string, string]>('DELETE FROM zsets WHERE key = ? AND member = ?');
  const rangeByScore = db.prepare<[string, number, number, number], { member: string; score: number }>(
    'SELECT member, score FROM zsets WHERE key = ? AND score >= ? AND score <= ? ORDER BY score, member LIMIT ?',
  );
  const revRangeByScore = db.prepare<[string, number, number, number], { member: string; score: number }>(
    'SELECT member, score FROM zsets WHERE key = ? AND score >= ? AND score <= ? ORDER BY score DESC, member DESC LIMIT ?',
  );
  const keysWithPrefix = db.prepare<[{ prefix: string; now: number }], { key: string }>(`
    SELECT key FROM strings WHERE ${PREFIX} AND ${LIVE}
    UNION SELECT key FROM sets WHERE ${PREFIX}
    UNION SELECT key FROM zsets WHERE ${PREFIX}
    ORDER BY key`);

  const typeAt = (key: string, now: number): KeyType => typeOf.get({ key, now })?.type ?? 'none';

  /**
   * Every write runs in an IMMEDIATE transaction (the write lock is taken before the first
   * read, so read-check-write is atomic across processes too) and reclaims a bounded batch of
   * expired strings. Each body then forgets its own key's expired value first, so an expired
   * key behaves exactly like an absent one.
   *
   * Writes are group-committed: those called within one turn of the event loop run in call
   * order in one transaction after it (each with the clock read when it was called), as the
   * bus groups its produces: concurrent API requests' writes (an id claim, an async outcome, a
   * settle) then take the file's lock against the pipeline threads' writes once, not each. If
   * the group's transaction fails, each write runs again alone, so one write's error fails only
   * its own caller.
   */
  interface QueuedWrite {
    run: () => unknown;
    resolve: (result: unknown) => void;
    reject: (err: unknown) => void;
  }
  const queued: QueuedWrite[] = [];
  let flushScheduled = false;
  const groupTx = db.transaction((batch: readonly QueuedWrite[]): unknown[] => {
    sweep.run({ now: clock(), batch: SWEEP_BATCH });
    return batch.map((q) => q.run());
  });
  const aloneTx = db.transaction((q: QueuedWrite): unknown => {
    sweep.run({ now: clock(), batch: SWEEP_BATCH });
    return q.run();
  });
  function flush(): void {
    flushScheduled = false;
    const batch = queued.splice(0);
    if (batch.length === 0) return;
    let results: unknown[];
    try {
      results = underLock(writeLock, () => groupTx.immediate(batch));
    } catch {
      for (const q of batch) {
        try {
          q.resolve(underLock(writeLock, () => aloneTx.immediate(q)));
        } catch (err) {
          q.reject(err);
        }
      }
      return;
    }
    batch.forEach((q, i) => q.resolve(results[i]));
  }

  function write<A extends unknown[], R>(body: (now: number, ...args: A) => R): ((...args: A) => Promise<R>) & { body: (now: number, ...args: A) => R } {
    const enqueue = (...args: A): Promise<R> => {
      if (!db.open) return Promise.reject(new GovernedMemoryError('MEM_UNAVAILABLE', 'the state store is closed'));
      const now = clock();
      return new Promise<R>((resolve, reject) => {
        queued.push({ run: () => body(now, ...args), resolve: resolve as (result: unknown) => void, reject });
        if (flushScheduled) return;
        flushScheduled = true;
        setImmediate(flush);
      });
    };
    // `body` runs inside another write's transaction (a pipeline's), with its clock reading.
    return Object.assign(enqueue, { body });
  }

  /** Reads run in one transaction so a multi-key read sees one snapshot and one clock. */
  function read<A extends unknown[], R>(body: (now: number, ...args: A) => R): (...args: A) => R {
    const tx = db.transaction((...args: A): R => body(clock(), ...args));
    return (...args: A) => tx.deferred(...args);
  }

  /** Forgets the key's expired value, then refuses a key of another type; returns the type. */
  function requireType(key: string, now: number, expected: KeyType): KeyType {
    purgeKey.run({ key, now });
    const actual = typeAt(key, now);
    if (actual !== 'none' && actual !== expected) throw wrongType();
    return actual;
  }

  const setTx = write((now, key: string, value: string, ttlMs: number | undefined, nx: boolean): boolean => {
    purgeKey.run({ key, now });
    const type = typeAt(key, now);
    if (nx && type !== 'none') return false;
    // Like Redis SET: replaces a key of any type, and a plain set drops an earlier TTL.
    if (type === 'set') delSet.run(key);
    if (type === 'zset') delZset.run(key);
    putString.run({ key, value, expiresAt: ttlMs === undefined ? null : now + Math.ceil(ttlMs) });
    return true;
  });

  const casTx = write((now, key: string, value: string, version: number): boolean => {
    if (requireType(key, now, 'string') === 'none') {
      putString.run({ key, value, expiresAt: null });
      return true;
    }
    return casUpdate.run({ key, value, version }).changes === 1;
  });

  const delTx = write((now, keys: string[]): number => {
    let removed = 0;
    for (const key of new Set(keys)) {
      purgeKey.run({ key, now });
      const changes = delString.run(key).changes + delSet.run(key).changes + delZset.run(key).changes;
      if (changes > 0) removed += 1;
    }
    return removed;
  });

  const saddTx = write((now, key: string, added: string[]): number => {
    requireType(key, now, 'set');
    let count = 0;
    for (const member of added) count += addMember.run(key, member).changes;
    return count;
  });

  const sremTx = write((now, key: string, removed: string[]): number => {
    requireType(key, now, 'set');
    let count = 0;
    for (const member of new Set(removed)) count += remMember.run(key, member).changes;
    return count;
  });

  const zaddTx = write((now, key: string, score: number, member: string): void => {
    requireType(key, now, 'zset');
    putScore.run(key, member, score);
  });

  const zremTx = write((now, key: string, removed: string[]): number => {
    requireType(key, now, 'zset');
    let count = 0;
    for (const member of new Set(removed)) count += remScored.run(key, member).changes;
    return count;
  });

  const incrTx = write((now, key: string, step: number | undefined, ttlMs: number | undefined): number => {
    const by = step ?? 1;
    requireType(key, now, 'string');
    const current = getLive.get({ key, now });
    if (current === undefined) {
      putString.run({ key, value: String(by), expiresAt: ttlMs === undefined ? null : now + ttlMs });
      return by;
    }
    const n = /^-?\d+$/.test(current.value) ? Number(current.value) : Number.NaN;
    if (!Number.isSafeInteger(n + by)) {
      throw new GovernedMemoryError('MEM_VALIDATION', 'incr: the value is not an integer in range');
    }
    // Like Redis INCR, an existing TTL is kept.
    updateValueKeepTtl.run({ key, value: String(n + by) });
    return n + by;
  });

  /**
   * Every write of a pipeline in one IMMEDIATE transaction, with one clock reading and one sweep:
   * the writes' bodies run directly (a throw rolls the whole pipeline back), not as nested
   * transactions — a savepoint and a sweep per write cost more than most writes themselves.
   */
  const pipelineTx = write((now, writes: readonly KvWrite[]): KvWriteResult[] =>
    writes.map((w): KvWriteResult => {
      switch (w.op) {
        case 'set':
          return setTx.body(now, w.key, w.value, w.ttlMs, w.nx ?? false);
        case 'setIfVersionAtLeast':
          return casTx.body(now, w.key, w.value, w.version);
        case 'del':
          return w.keys.length === 0 ? 0 : delTx.body(now, w.keys);
        case 'sadd':
          return w.members.length === 0 ? 0 : saddTx.body(now, w.key, w.members);
        case 'srem':
          return w.members.length === 0 ? 0 : sremTx.body(now, w.key, w.members);
        case 'zadd':
          zaddTx.body(now, w.key, w.score, w.member);
          return null;
        case 'zrem':
          return w.members.length === 0 ? 0 : zremTx.body(now, w.key, w.members);
        case 'incr':
          return incrTx.body(now, w.key, w.by, w.ttlMs);
        default: {
          const never: never = w;
          throw new GovernedMemoryError('MEM_VALIDATION', `pipeline: unknown write ${JSON.stringify(never)}`);
        }
      }
    }),
  );

  const mgetTx = read((now, keys: string[]) => keys.map((key) => getLive.get({ key, now })?.value ?? null));
  const existsTx = read((now, keys: string[]) => keys.filter((key) => typeAt(key, now) !== 'none').length);

  return {
    async pipeline(writes) {
      for (const w of writes) checkWrite(w);
      return writes.length === 0 ? [] : pipelineTx(writes);
    },

    async get(key) {
      return getLive.get({ key, now: clock() })?.value ?? null;
    },

    async mget(keys) {
      return keys.length === 0 ? [] : mgetTx(keys);
    },

    async set(key, value, opts = {}) {
      const { ttlMs, nx = false } = opts;
      checkWrite({ op: 'set', key, value, ...opts });
      return setTx(key, value, ttlMs, nx);
    },

    async setIfVersionAtLeast(key, value, version) {
      return casTx(key, value, version);
    },

    async del(keys) {
      return keys.length === 0 ? 0 : delTx(keys);
    },

    async exists(keys) {
      // Like Redis EXISTS, a key named twice counts twice.
      return keys.length === 0 ? 0 : existsTx(keys);
    },

    async sadd(key, added) {
      return added.length === 0 ? 0 : saddTx(key, added);
    },

    async srem(key, removed) {
      return removed.length === 0 ? 0 : sremTx(key, removed);
    },

    async smembers(key) {
      return members.all(key).map((row) => row.member);
    },

    async zadd(key, score, member) {
      checkWrite({ op: 'zadd', key, score, member });
      await zaddTx(key, score, member);
    },

    async zrem(key, removed) {
      return removed.length === 0 ? 0 : zremTx(key, removed);
    },

    async zrangeByScore(key, min, max, limit) {
      const n = Math.floor(limit);
      // SQLite reads a negative LIMIT as "no limit"; the port promises "at most limit".
      if (!(n > 0)) return [];
      return rangeByScore.all(key, min, max, n);
    },

    async zrevrangeByScore(key, max, min, limit) {
      const n = Math.floor(limit);
      if (!(n > 0)) return [];
      return revRangeByScore.all(key, min, max, n);
    },

    async keys(prefix) {
      return keysWithPrefix.all({ prefix, now: clock() }).map((row) => row.key);
    },

    async incr(key) {
      return incrTx(key, undefined, undefined);
    },

    async ping() {
      if (!db.open) return false;
      return db.prepare<[], { ok: number }>('SELECT 1 AS ok').get()?.ok === 1;
    },

    async eraseDeleted() {
      return truncateWal(db, writeLock, secureErasure);
    },
    async close() {
      // What was called before the close still lands (its callers are waiting).
      flush();
      if (db.open) db.close();
    },
  };
}
