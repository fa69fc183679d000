import { Redis, ReplyError, type RedisOptions, type Result } from 'ioredis';
import { GovernedMemoryError, type ErrorCode } from '@gm/contracts';
import { checkWrite } from '../pipeline.ts';
import { rewritePersistence } from './persistence-rewrite.ts';
import type { KeyValueStore, KvWrite, KvWriteResult } from '../port.ts';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** CAS_SCRIPT (defineCommand): 1 written, 0 refused, -1 wrong type. */
    casVersion(key: string, value: string, version: string): Result<number, Context>;
    /** INCR_SCRIPT (defineCommand): the new value. */
    incrWithTtl(key: string, by: string, ttlMs: string): Result<number, Context>;
  }
}

/** One Redis, or the primary a set of Sentinels names (and follows through a failover). */
export type RedisTarget =
  | {
    /** `redis://[[user]:password@]host:port[/db]` */
    url: string;
  }
  | {
    sentinels: readonly { host: string; port: number }[];
    /** The master name the Sentinels watch. */
    name: string;
  };

export type RedisKeyValueStoreOptions = RedisTarget & {
  /**
   * Prepended to every key and stripped from `keys` results, so several users of one Redis
   * (test files, runtimes) never see each other's keys. Default: none.
   */
  keyPrefix?: string;
};

/*
 * Fail fast, never stale. Commands issued before the first connection wait for it (offline
 * queue), so a store can be used as soon as it is created; once connected, or once that
 * first connection has failed MAX_RETRIES_PER_REQUEST + 1 times, the queue is switched off
 * and a command issued while Redis is away is rejected at once. One in flight when the
 * connection drops is retried over at most that many reconnects, then rejected.
 * Reconnection itself never gives up, so the store recovers when Redis returns; the delay is
 * capped so recovery is noticed quickly.
 */
const MAX_RETRIES_PER_REQUEST = 2;
const CONNECT_TIMEOUT_MS = 3_000;
/** A Redis that accepts connections but does not answer (paused, busy) is unavailable too. */
const COMMAND_TIMEOUT_MS = 5_000;
const retryDelayMs = (attempt: number): number => Math.min(attempt * 100, 1_000);
/** Keys examined per SCAN round trip; MATCH filters after the examination. */
const SCAN_COUNT = 1_000;

/*
 * The atomic check-and-set of `setIfVersionAtLeast`, inside Redis so no other client can
 * write between the read and the write. Returns 1 written, 0 refused, -1 wrong type.
 * A stored value that is not JSON, not an object, or has no numeric `version` is never
 * overwritten (pcall keeps cjson's error on non-JSON from aborting the script). SET without
 * options drops any TTL: a versioned record does not expire, as in the SQLite adapter.
 */
const CAS_SCRIPT = `
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
if kind ~= 'string' then return -1 end
local ok, stored = pcall(cjson.decode, redis.call('GET', KEYS[1]))
if not ok or type(stored) ~= 'table' or type(stored.version) ~= 'number' then return 0 end
if stored.version > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`;

/**
 * INCRBY that gives the key it creates a lifetime: one round trip in a pipeline, and a counter
 * never outlives its window without a TTL (an INCR and a PEXPIRE apart could be split by a crash).
 */
const INCR_SCRIPT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n
`;

/*
 * Redis error replies begin with an upper-case error code (WRONGTYPE, LOADING, ERR …): the
 * protocol's own classification, read here instead of the free text after it.
 */
const TRANSIENT_REPLIES = new Set(['LOADING', 'BUSY', 'TRYAGAIN', 'MASTERDOWN', 'CLUSTERDOWN']);

function replyCode(err: Error): string {
  return /^([A-Z]+)\s/.exec(err.message)?.[1] ?? 'ERR';
}

/*
 * A primary demoted by a Sentinel failover stays reachable and answers writes with READONLY.
 * Reconnecting asks the Sentinels for the new primary; 2 resends the refused command there.
 * The SET and the check-and-set are safe to resend: a refused write changed nothing.
 */
function reconnectOnDemotion(err: Error): 2 | false {
  return replyCode(err) === 'READONLY' ? 2 : false;
}

/** `ReplyError` comes untyped from ioredis; this keeps `any` from spreading into the code. */
function isReplyError(err: unknown): err is Error {
  return err instanceof Error && err instanceof ReplyError;
}

function wrongType(op: string, cause?: unknown): GovernedMemoryError {
  return new GovernedMemoryError('MEM_INTERNAL', `${op}: WRONGTYPE: the key holds a different kind of value`, { cause });
}

/** `-inf` / `+inf` are Redis's spellings of the infinite scores. */
function formatScore(score: number): string {
  if (score === Infinity) return '+inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}

function parseScore(text: string): number {
  if (text === 'inf' || text === '+inf') return Infinity;
  if (text === '-inf') return -Infinity;
  return Number(text);
}

/** A WITHSCORES reply (member, score, member, score, …) as entries. */
function scoredEntries(flat: string[]): Array<{ member: string; score: number }> {
  const entries: Array<{ member: string; score: number }> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const member = flat[i];
    const score = flat[i + 1];
    if (member !== undefined && score !== undefined) entries.push({ member, score: parseScore(score) });
  }
  return entries;
}

/** UTF-8 byte order, the order of the SQLite adapter's `ORDER BY key` (BINARY collation). */
function sortBytewise(values: Iterable<string>): string[] {
  return [...values]
    .map((value) => ({ value, bytes: Buffer.from(value, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ value }) => value);
}

/** Redis glob metacharacters are matched literally once backslash-escaped. */
function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

export function createRedisKeyValueStore(options: RedisKeyValueStoreOptions): KeyValueStore {
  const keyPrefix = options.keyPrefix ?? '';
  const k = (key: string): string => keyPrefix + key;
  // ioredis reads this option per command, so switching it off takes effect at once.
  const stopQueueing = (): void => {
    redis.options.enableOfflineQueue = false;
  };
  const common: RedisOptions = {
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: MAX_RETRIES_PER_REQUEST,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    retryStrategy: (attempt) => {
      // ioredis rejects the queued commands at this attempt; later ones should not queue.
      if (attempt > MAX_RETRIES_PER_REQUEST) stopQueueing();
      return retryDelayMs(attempt);
    },
    reconnectOnError: reconnectOnDemotion,
  };
  const redis = 'url' in options
    ? new Redis(options.url, common)
    : new Redis({
      ...common,
      sentinels: options.sentinels.map(({ host, port }) => ({ host, port })),
      name: options.name,
      sentinelCommandTimeout: COMMAND_TIMEOUT_MS,
      // Subscribes to the Sentinels' +switch-master: the client moves on a failover at once,
      // instead of when its connection to the old primary breaks or is refused.
      failoverDetector: true,
    });
  // Connection errors reach callers through their commands; the last one names the cause
  // (ECONNREFUSED …). Without a listener ioredis would print each one to the console.
  let lastConnectionError: unknown;
  redis.on('error', (err: unknown) => {
    lastConnectionError = err;
  });
  redis.on('ready', () => {
    lastConnectionError = undefined;
    stopQueueing();
  });

  function translate(op: string, err: unknown, replyCodes: Partial<Record<string, ErrorCode>>): GovernedMemoryError {
    if (err instanceof GovernedMemoryError) return err;
    if (isReplyError(err)) {
      const code = replyCode(err);
      if (code === 'WRONGTYPE') return wrongType(op, err);
      const mapped = replyCodes[code];
      if (mapped !== undefined) return new GovernedMemoryError(mapped, `${op}: Redis refused the command (${code})`, { cause: err });
      if (TRANSIENT_REPLIES.has(code)) {
        return new GovernedMemoryError('MEM_UNAVAILABLE', `${op}: Redis is not ready (${code})`, { retriable: true, cause: err });
      }
      return new GovernedMemoryError('MEM_INTERNAL', `${op}: Redis refused the command (${code})`, { cause: err });
    }
    // Anything else is about the connection: refused, closed, timed out, retries exhausted.
    const reason = lastConnectionError instanceof Error && 'code' in lastConnectionError ? ` (${String(lastConnectionError.code)})` : '';
    return new GovernedMemoryError('MEM_UNAVAILABLE', `${op}: Redis is unavailable${reason}`, { retriable: true, cause: err });
  }

  /** Runs one Redis interaction; every failure leaves as a GovernedMemoryError. */
  async function run<T>(op: string, body: () => Promise<T>, replyCodes: Partial<Record<string, ErrorCode>> = {}): Promise<T> {
    try {
      return await body();
    } catch (err) {
      throw translate(op, err, replyCodes);
    }
  }

  // EVALSHA, falling back to EVAL when Redis does not hold the script yet (ioredis's defined
  // commands), on the connection and in pipelines alike.
  redis.defineCommand('casVersion', { numberOfKeys: 1, lua: CAS_SCRIPT });
  redis.defineCommand('incrWithTtl', { numberOfKeys: 1, lua: INCR_SCRIPT });

  /** One pipeline: every write queued, one round trip, each reply checked and converted as its method does. */
  async function pipeline(writes: readonly KvWrite[]): Promise<KvWriteResult[]> {
    const p = redis.pipeline();
    for (const w of writes) {
      switch (w.op) {
        case 'set': {
          const nx = w.nx === true;
          if (w.ttlMs === undefined) {
            if (nx) p.set(k(w.key), w.value, 'NX');
            else p.set(k(w.key), w.value);
          } else if (nx) p.set(k(w.key), w.value, 'PX', Math.ceil(w.ttlMs), 'NX');
          else p.set(k(w.key), w.value, 'PX', Math.ceil(w.ttlMs));
          break;
        }
        case 'setIfVersionAtLeast':
          p.casVersion(k(w.key), w.value, String(w.version));
          break;
        case 'del':
          if (w.keys.length > 0) p.del(w.keys.map(k));
          else p.echo('0');
          break;
        case 'sadd':
          if (w.members.length > 0) p.sadd(k(w.key), w.members);
          else p.echo('0');
          break;
        case 'srem':
          if (w.members.length > 0) p.srem(k(w.key), w.members);
          else p.echo('0');
          break;
        case 'zadd':
          p.zadd(k(w.key), formatScore(w.score), w.member);
          break;
        case 'zrem':
          if (w.members.length > 0) p.zrem(k(w.key), w.members);
          else p.echo('0');
          break;
        case 'incr':
          if (w.ttlMs !== undefined) p.incrWithTtl(k(w.key), String(w.by ?? 1), String(w.ttlMs));
          else if (w.by !== undefined) p.incrby(k(w.key), w.by);
          else p.incr(k(w.key));
          break;
        default: {
          const never: never = w;
          throw new GovernedMemoryError('MEM_VALIDATION', `pipeline: unknown write ${JSON.stringify(never)}`);
        }
      }
    }
    const replies = (await run('pipeline', () => p.exec())) ?? [];
    return writes.map((w, i): KvWriteResult => {
      const [err, reply] = replies[i] ?? [new Error('no reply'), null];
      if (err) throw translate(w.op, err, w.op === 'incr' ? { ERR: 'MEM_VALIDATION' } : {});
      switch (w.op) {
        case 'set':
          return reply === 'OK';
        case 'setIfVersionAtLeast':
          if (reply === -1) throw wrongType('setIfVersionAtLeast');
          return reply === 1;
        case 'zadd':
          return null;
        default:
          return Number(reply);
      }
    });
  }

  return {
    async pipeline(writes) {
      for (const w of writes) checkWrite(w);
      return writes.length === 0 ? [] : pipeline(writes);
    },

    async get(key) {
      return run('get', () => redis.get(k(key)));
    },

    async mget(keys) {
      if (keys.length === 0) return [];
      return run('mget', () => redis.mget(keys.map(k)));
    },

    async set(key, value, opts = {}) {
      const { ttlMs, nx = false } = opts;
      checkWrite({ op: 'set', key, value, ...opts });
      // Plain SET replaces a key of any kind and drops its TTL, which the port relies on.
      const reply = await run('set', () => {
        if (ttlMs === undefined) return nx ? redis.set(k(key), value, 'NX') : redis.set(k(key), value);
        const px = Math.ceil(ttlMs);
        return nx ? redis.set(k(key), value, 'PX', px, 'NX') : redis.set(k(key), value, 'PX', px);
      });
      return reply === 'OK';
    },

    async setIfVersionAtLeast(key, value, version) {
      // Lua would read NaN and ±Infinity differently from the SQLite adapter; versions are counts.
      checkWrite({ op: 'setIfVersionAtLeast', key, value, version });
      const reply = await run('setIfVersionAtLeast', () => redis.casVersion(k(key), value, String(version)));
      if (reply === -1) throw wrongType('setIfVersionAtLeast');
      return reply === 1;
    },

    async del(keys) {
      if (keys.length === 0) return 0;
      return run('del', () => redis.del(keys.map(k)));
    },

    async exists(keys) {
      if (keys.length === 0) return 0;
      return run('exists', () => redis.exists(keys.map(k)));
    },

    async sadd(key, members) {
      if (members.length === 0) return 0;
      return run('sadd', () => redis.sadd(k(key), members));
    },

    async srem(key, members) {
      if (members.length === 0) return 0;
      return run('srem', () => redis.srem(k(key), members));
    },

    async smembers(key) {
      // Sorted like the SQLite adapter's, so callers see one order on both runtimes.
      return sortBytewise(await run('smembers', () => redis.smembers(k(key))));
    },

    async zadd(key, score, member) {
      checkWrite({ op: 'zadd', key, score, member });
      await run('zadd', () => redis.zadd(k(key), formatScore(score), member));
    },

    async zrem(key, members) {
      if (members.length === 0) return 0;
      return run('zrem', () => redis.zrem(k(key), members));
    },

    async zrangeByScore(key, min, max, limit) {
      const n = Math.floor(limit);
      // A NaN bound matches nothing (SQLite compares it as NULL); Redis would refuse it.
      if (!(n > 0) || Number.isNaN(min) || Number.isNaN(max)) return [];
      const flat = await run('zrangeByScore', () =>
        redis.zrangebyscore(k(key), formatScore(min), formatScore(max), 'WITHSCORES', 'LIMIT', 0, n),
      );
      return scoredEntries(flat);
    },

    async zrevrangeByScore(key, max, min, limit) {
      const n = Math.floor(limit);
      if (!(n > 0) || Number.isNaN(min) || Number.isNaN(max)) return [];
      const flat = await run('zrevrangeByScore', () =>
        redis.zrevrangebyscore(k(key), formatScore(max), formatScore(min), 'WITHSCORES', 'LIMIT', 0, n),
      );
      return scoredEntries(flat);
    },

    async keys(prefix) {
      // SCAN, not KEYS: it does not block the server on a large keyspace. It may return a key
      // twice and never returns one that has expired.
      const pattern = `${escapeGlob(k(prefix))}*`;
      const found = new Set<string>();
      let cursor = '0';
      do {
        const [next, batch] = await run('keys', () => redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT));
        for (const key of batch) found.add(key.slice(keyPrefix.length));
        cursor = next;
      } while (cursor !== '0');
      return sortBytewise(found);
    },

    async incr(key) {
      // INCR answers ERR (and nothing else) when the value is not an integer in range.
      return run('incr', () => redis.incr(k(key)), { ERR: 'MEM_VALIDATION' });
    },

    async ping() {
      // The readiness probe: an unreachable Redis is a "no", not an exception.
      try {
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },

    /** A deleted key leaves memory at once, and the AOF and RDB files of every server once rewritten (persistence-rewrite.ts). */
    eraseDeleted: () => rewritePersistence(redis),

    async close() {
      if (redis.status === 'end') return;
      if (redis.status === 'ready') {
        try {
          await redis.quit();
          // With Sentinels, QUIT leaves the failover detector's Sentinel connections open (and
          // the process alive); disconnecting the closed client closes them.
          if (!('url' in options)) redis.disconnect();
          return;
        } catch {
          // The connection went away while quitting: closing it locally below is all that is left.
        }
      }
      // Not connected (or QUIT failed): stop reconnecting and drop the socket.
      redis.disconnect();
    },
  };
}
