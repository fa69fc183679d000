import { Redis, type RedisOptions } from 'ioredis';
import type { CopyErasureState } from '@gm/contracts';

/*
 * A deleted key leaves Redis's memory at once, but its SET stays in the append-only file (and an
 * RDB snapshot) until Redis rewrites them. Erasure must reach the files too (design §8.4), on the
 * primary and on every replica, which keeps files of its own. A rewrite is asked for inside
 * MULTI: the INFO read with it says exactly which rewrite is the first to begin after the ask,
 * and concurrent erasures share one rewrite (Redis schedules at most one more).
 */

/** How long a rewrite may take before the copy is reported as held in memory only. */
const REWRITE_WAIT_MS = 60_000;
const POLL_MS = 25;

type InfoSection = Record<string, string>;

const parseInfo = (text: string): InfoSection =>
  Object.fromEntries(text.split('\r\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));

async function info(redis: Redis, section: string): Promise<InfoSection> {
  return parseInfo(await redis.info(section));
}

/** Redis 7's kinds of file, each with its command and its counter of rewrites begun. */
const FILES = [
  { kind: 'aof', command: 'BGREWRITEAOF', running: 'aof_rewrite_in_progress', begun: 'aof_rewrites', status: 'aof_last_bgrewrite_status' },
  { kind: 'rdb', command: 'BGSAVE', running: 'rdb_bgsave_in_progress', begun: 'rdb_saves', status: 'rdb_last_bgsave_status' },
] as const;
type FileKind = (typeof FILES)[number];

/**
 * Asks for one rewrite that begins after now and waits for it. `false` when Redis refuses (a
 * managed Redis may rename the command), the rewrite fails, or it outlasts the wait.
 */
async function rewriteOnce(redis: Redis, file: FileKind): Promise<boolean> {
  const deadline = Date.now() + REWRITE_WAIT_MS;
  for (;;) {
    const replies = await redis.multi().info('persistence').call(file.command).exec().catch(() => null);
    const [infoReply, askReply] = replies ?? [];
    if (infoReply === undefined || infoReply[0] !== null) return false;
    const before = parseInfo(String(infoReply[1]));
    // Redis counts a rewrite when it begins: one counted after this read began after the ask.
    const begun = Number(before[file.begun]);
    if (!Number.isInteger(begun)) return false;
    // Inside MULTI the ask is always "scheduled", unless one of this kind is running: then that
    // one began before the deletion, and the ask must be repeated once it is done.
    const retryAfterRunning = askReply?.[0] instanceof Error && /in progress/i.test(askReply[0].message);
    if (askReply?.[0] instanceof Error && !retryAfterRunning) return false;
    for (;;) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const now = await info(redis, 'persistence');
      if (now[file.running] !== '0') continue;
      if (retryAfterRunning) break;
      if (Number(now[file.begun]) > begun) return now[file.status] === 'ok';
    }
  }
}

/** The rewrites a server's files need: the AOF when it is on; an RDB file when snapshots are configured, or on a replica (its full sync left one). */
async function filesOf(redis: Redis): Promise<FileKind[]> {
  const persistence = await info(redis, 'persistence');
  const role = (await info(redis, 'replication')).role;
  const save = await redis.config('GET', 'save').then((r) => String((r as string[])[1] ?? ''), () => '');
  return FILES.filter((f) => (f.kind === 'aof' ? persistence.aof_enabled === '1' : save !== '' || role === 'slave'));
}

/** The replicas the primary names (`slaveN:ip=…,port=…`), reached with the primary's credentials. */
function replicasOf(replication: InfoSection, options: RedisOptions): Redis[] {
  return Object.entries(replication).filter(([name]) => /^slave\d+$/.test(name)).flatMap(([, value]) => {
    const fields = new Map(value.split(',').map((kv) => kv.split('=') as [string, string]));
    const host = fields.get('ip');
    const port = Number(fields.get('port'));
    if (host === undefined || !Number.isInteger(port)) return [];
    const replica = new Redis({
      host, port, username: options.username, password: options.password, tls: options.tls,
      lazyConnect: false, maxRetriesPerRequest: 1, connectTimeout: options.connectTimeout, commandTimeout: options.commandTimeout,
      retryStrategy: () => null,
    });
    replica.on('error', () => undefined); // an unreachable replica fails its commands: memory_only
    return [replica];
  });
}

/** Waits until a replica has applied the primary's stream up to `offset` (the deletions among it). */
async function caughtUp(replica: Redis, offset: number): Promise<boolean> {
  const deadline = Date.now() + REWRITE_WAIT_MS;
  while (Date.now() <= deadline) {
    if (Number((await info(replica, 'replication')).slave_repl_offset) >= offset) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return false;
}

async function rewriteServer(redis: Redis, offset?: number): Promise<boolean> {
  if (offset !== undefined && !(await caughtUp(redis, offset))) return false;
  for (const file of await filesOf(redis)) {
    if (!(await rewriteOnce(redis, file))) return false;
  }
  return true;
}

/**
 * Rewrites the persistence files of the primary and every replica so keys deleted before the
 * call are in none of them: `erased`, or `memory_only` when any server could not (a refused
 * command, a failed rewrite, an unreachable replica).
 */
export async function rewritePersistence(primary: Redis): Promise<CopyErasureState> {
  let replicas: Redis[] = [];
  try {
    const replication = await info(primary, 'replication');
    const offset = Number(replication.master_repl_offset);
    replicas = replicasOf(replication, primary.options);
    const results = await Promise.all([
      rewriteServer(primary).catch(() => false),
      ...replicas.map((replica) => rewriteServer(replica, offset).catch(() => false)),
    ]);
    return results.every(Boolean) ? 'erased' : 'memory_only';
  } catch {
    return 'memory_only';
  } finally {
    for (const replica of replicas) replica.disconnect();
  }
}
