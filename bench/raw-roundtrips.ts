import Database from 'better-sqlite3';
import { Client } from '@elastic/elasticsearch';
import { Redis } from 'ioredis';
import { engineCpuPer } from './cpu.ts';
import { contentOf } from './corpus.ts';
import { documentOf } from './raw-search.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

/** Single round trips of the stores one write or one search touches, one at a time. */
export interface RawRoundTrips {
  redisSet: Summary;
  redisGet: Summary;
  /** One row inserted in its own transaction (WAL, synchronous=FULL like bus.db), then read back. */
  sqliteInsertSelect: Summary;
  /** Rows/s inserted 500 per transaction (WAL, synchronous=FULL): the raw figure beside a batch write. */
  sqliteBatchedInsertPerSecond: number;
  /** One row deleted in its own transaction, secure_delete off: the raw figure beside a delete without secure erasure. */
  sqliteDelete: Summary;
  /** The same with secure_delete on, then a TRUNCATE checkpoint: the freed bytes zeroed, the WAL emptied (secure erasure's floor). */
  sqliteSecureDelete: Summary;
  /** One document indexed with refresh=true (what the index-builder asks for), alone. */
  esIndexRefresh: Summary;
  /** Elasticsearch's CPU ms (/proc) per document of those index+refresh round trips. */
  esIndexRefreshCpuMs: number;
}

const WARMUP = 20;
/** Rows per transaction of the batched insert: the API's largest batch. */
const BATCH_ROWS = 500;

async function sample(n: number, op: (i: number) => Promise<unknown> | unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + WARMUP; i += 1) {
    const started = performance.now();
    await op(i);
    if (i >= WARMUP) out.push(performance.now() - started);
  }
  return out;
}

export async function measureRoundTrips(
  redisUrl: string, keyPrefix: string, esUrl: string, esIndex: string, sqliteFile: string, n: number,
): Promise<RawRoundTrips> {
  const value = contentOf(0);
  const redis = new Redis(redisUrl, { lazyConnect: true });
  await redis.connect();
  let redisSet: number[];
  let redisGet: number[];
  try {
    redisSet = await sample(n, (i) => redis.set(`${keyPrefix}${i}`, value));
    redisGet = await sample(n, (i) => redis.get(`${keyPrefix}${i}`));
  } finally {
    const keys = await redis.keys(`${keyPrefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
  progress(`raw redis: ${n} SET + ${n} GET round trips`);

  const db = new Database(sqliteFile);
  let sqliteMs: number[];
  let sqliteBatchedInsertPerSecond = 0;
  let sqliteDeleteMs: number[];
  let sqliteSecureDeleteMs: number[];
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)');
    const put = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)');
    const get = db.prepare('SELECT v FROM kv WHERE k = ?');
    sqliteMs = await sample(n, (i) => {
      put.run(`k${i}`, value);
      return get.get(`k${i}`);
    });
    const putBatch = db.transaction((from: number) => {
      for (let i = from; i < from + BATCH_ROWS; i += 1) put.run(`b${i}`, value);
    });
    const batches = Math.max(4, Math.ceil(n / 100));
    const started = performance.now();
    for (let b = 0; b < batches; b += 1) putBatch.immediate(b * BATCH_ROWS);
    sqliteBatchedInsertPerSecond = perSecond(batches * BATCH_ROWS, performance.now() - started);
    // Single-row deletes of rows put there for them: the first half plain, the second half as
    // secure erasure does it (each sample takes WARMUP more).
    const half = Math.max(1, Math.floor(n / 2));
    const perHalf = half + WARMUP;
    db.transaction(() => {
      for (let i = 0; i < 2 * perHalf; i += 1) put.run(`d${i}`, value);
    }).immediate();
    const del = db.prepare('DELETE FROM kv WHERE k = ?');
    const deleteOne = (key: string) => {
      if (del.run(key).changes !== 1) throw new Error(`raw sqlite: row ${key} was not there to delete`);
    };
    sqliteDeleteMs = await sample(half, (i) => deleteOne(`d${i}`));
    db.pragma('secure_delete = ON');
    sqliteSecureDeleteMs = await sample(half, (i) => {
      deleteOne(`d${perHalf + i}`);
      db.pragma('wal_checkpoint(TRUNCATE)');
    });
  } finally {
    db.close();
  }
  progress(`raw sqlite: ${n} insert+select round trips, ${sqliteDeleteMs.length} plain and ${sqliteSecureDeleteMs.length} secure deletes`);

  const es = new Client({ node: esUrl, maxRetries: 0 });
  let esMs: number[];
  let esIndexRefreshCpuMs: number;
  const now = new Date();
  try {
    // Refreshing per document is expensive; a few hundred show its distribution.
    const docs = Math.min(n, 300);
    ({ result: esMs, cpuMsPerUnit: esIndexRefreshCpuMs } = await engineCpuPer('elasticsearch', docs + WARMUP, () => sample(docs, (i) => {
      const d = documentOf(i, 100, now);
      return es.index({ index: esIndex, id: `${d.tenantId}/${d.recordId}`, document: { ...d, expiresAtMs: Date.parse(d.expiresAt) }, refresh: true });
    })));
  } finally {
    await es.indices.delete({ index: esIndex, ignore_unavailable: true }).catch(() => undefined);
    await es.close();
  }
  progress(`raw elasticsearch: ${esMs.length} single-document index+refresh round trips`);
  return {
    redisSet: summarize(redisSet), redisGet: summarize(redisGet), sqliteInsertSelect: summarize(sqliteMs), sqliteBatchedInsertPerSecond,
    sqliteDelete: summarize(sqliteDeleteMs), sqliteSecureDelete: summarize(sqliteSecureDeleteMs),
    esIndexRefresh: summarize(esMs), esIndexRefreshCpuMs,
  };
}
