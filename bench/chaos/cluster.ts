/**
 * The local cluster the fault suite runs on (infra/local/cluster.sh; docs/reliability.md "Local
 * cluster"): its addresses as the services' env, its nodes as processes to kill, freeze and
 * restart, and what "healthy again" means for each engine.
 */
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { Redis } from 'ioredis';
import { runChild } from './child.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

const KAFKA_BROKERS = ['127.0.0.1:29092', '127.0.0.1:29093', '127.0.0.1:29094'];
const ELASTICSEARCH_NODES = ['http://127.0.0.1:29200', 'http://127.0.0.1:29201'];
const SENTINELS = [26479, 26480, 26481];
const SENTINEL_NAME = 'gm-primary';
/** The Redis nodes by port, as cluster.sh names them (by their role when the cluster started). */
const REDIS_NODES: Record<number, string> = { 26379: 'redis-primary', 26380: 'redis-replica' };

/** The services' env on the cluster: production mode, so they refuse under-replicated topics. */
export const CLUSTER_ENV: Record<string, string> = {
  KAFKA_BROKERS: KAFKA_BROKERS.join(','),
  ELASTICSEARCH_URL: ELASTICSEARCH_NODES.join(','),
  REDIS_SENTINELS: SENTINELS.map((p) => `127.0.0.1:${p}`).join(','),
  REDIS_SENTINEL_NAME: SENTINEL_NAME,
  MEMORY_KAFKA_REPLICATION_FACTOR: '3',
  MEMORY_KAFKA_MIN_INSYNC_REPLICAS: '2',
  MEMORY_PRODUCTION: 'true',
};

export type NodeSignal = 'KILL' | 'STOP' | 'CONT' | 'TERM';

export interface ClusterControl {
  /** Starts every node (idempotent) and waits until each engine serves. */
  start(): Promise<void>;
  /** Stops every node and deletes the cluster's data: the next start is an empty cluster. */
  reset(): Promise<void>;
  stop(): Promise<void>;
  /** Signals one node's process (kafka-1…3, es-1, es-2, redis-primary, redis-replica, sentinel-1…3). */
  signal(node: string, signal: NodeSignal): Promise<void>;
  /** Stops a node gracefully (Kafka: a controlled shutdown) and returns once its process has exited. */
  stopNode(node: string): Promise<void>;
  /** Starts a stopped or killed node again, then waits until the whole cluster is healthy. */
  restart(node: string): Promise<void>;
  /** Until every partition is fully in sync, Elasticsearch is green and the Redis replica is linked. */
  waitHealthy(): Promise<void>;
  elasticsearchNodeWithMostPrimaries(): Promise<string>;
  /** The Redis node Sentinel names primary now. */
  redisPrimary(): Promise<string>;
  /** Empties Redis (FLUSHALL on the primary, which the replica follows). */
  flushRedis(): Promise<void>;
  describe(): Record<string, unknown>;
}

/** Runs cluster.sh (asynchronously, `runChild`); its progress goes to stderr as it comes, except what a caller reads (`capture`). */
async function launcher(args: string[], capture = false): Promise<string> {
  const { code, stdout } = await runChild('bash', [path.join(ROOT, 'infra/local/cluster.sh'), ...args], { capture });
  if (code !== 0) throw new Error(`infra/local/cluster.sh ${args.join(' ')} exited with ${code}`);
  return stdout;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `ready` every half second for up to `boundMs`; throws naming `what` when it never is. */
async function until(what: string, boundMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + boundMs;
  while (!(await ready().catch(() => false))) {
    if (performance.now() > deadline) throw new Error(`${what} not within ${boundMs / 1000} s`);
    await pause(500);
  }
}

/**
 * Every partition of every topic (internal ones included) has all its replicas in sync and is
 * led by its preferred replica: the broker a fault left out has its leaderships back (the
 * cluster rebalances them every 5 s), so one broker does not carry every leader into the next
 * scenario.
 */
async function kafkaInSync(): Promise<boolean> {
  const admin = new Kafka({ clientId: 'gm-chaos-health', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING, requestTimeout: 5_000 }).admin();
  await admin.connect();
  try {
    if ((await admin.describeCluster()).brokers.length < KAFKA_BROKERS.length) return false;
    const topics = await admin.listTopics();
    const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
    return metadata.every((t) => t.partitions.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length && p.leader === p.replicas[0]));
  } finally {
    await admin.disconnect();
  }
}

async function elasticsearch(pathAndQuery: string): Promise<unknown> {
  for (const node of ELASTICSEARCH_NODES) {
    try {
      const res = await fetch(`${node}${pathAndQuery}`, { signal: AbortSignal.timeout(5_000) });
      if (res.ok) return await res.json();
    } catch {
      // the next node
    }
  }
  throw new Error(`no Elasticsearch node answered ${pathAndQuery}`);
}

async function withSentinel<T>(use: (sentinel: Redis) => Promise<T>): Promise<T> {
  for (const port of SENTINELS) {
    const sentinel = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2_000, retryStrategy: () => null });
    // A dead Sentinel's errors are the failed connect below; ioredis would print them as unhandled.
    sentinel.on('error', () => undefined);
    try {
      await sentinel.connect();
      return await use(sentinel);
    } catch {
      // the next Sentinel
    } finally {
      sentinel.disconnect();
    }
  }
  throw new Error('no Sentinel answered');
}

async function redisPrimaryPort(): Promise<number> {
  return withSentinel(async (s) => Number(((await s.call('SENTINEL', 'get-master-addr-by-name', SENTINEL_NAME)) as [string, string])[1]));
}

async function redisReplicaLinked(): Promise<boolean> {
  const primary = await redisPrimaryPort();
  const replicaPort = Number(Object.keys(REDIS_NODES).find((p) => Number(p) !== primary));
  const replica = new Redis({ port: replicaPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  replica.on('error', () => undefined);
  try {
    await replica.connect();
    const info = await replica.info('replication');
    return info.includes('role:slave') && info.includes('master_link_status:up') && info.includes(`master_port:${primary}`);
  } finally {
    replica.disconnect();
  }
}

export function clusterControl(): ClusterControl {
  const waitHealthy = async () => {
    await until('every Kafka partition in sync and led by its preferred replica', 180_000, kafkaInSync);
    await until('Elasticsearch green', 180_000, async () => (await elasticsearch('/_cluster/health') as { status: string }).status === 'green');
    await until('the Redis replica linked to the primary Sentinel names', 180_000, redisReplicaLinked);
  };
  return {
    start: async () => void (await launcher(['start'])),
    reset: async () => void (await launcher(['reset'])),
    stop: async () => void (await launcher(['stop'])),
    async signal(node, signal) {
      const pid = Number((await launcher(['pid', node], true)).trim());
      if (!Number.isInteger(pid) || pid <= 0) throw new Error(`cluster.sh names no pid for ${node}`);
      process.kill(pid, `SIG${signal}`);
    },
    stopNode: async (node) => void (await launcher(['stop-node', node])),
    async restart(node) {
      await launcher(['start-node', node]);
      await waitHealthy();
    },
    waitHealthy,
    async elasticsearchNodeWithMostPrimaries() {
      const shards = await elasticsearch('/_cat/shards?format=json&h=prirep,node') as Array<{ prirep: string; node: string | null }>;
      const counts = new Map<string, number>();
      for (const s of shards) if (s.prirep === 'p' && s.node) counts.set(s.node, (counts.get(s.node) ?? 0) + 1);
      const [node] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? [];
      if (node === undefined) throw new Error('no Elasticsearch node holds a primary shard');
      return node;
    },
    async redisPrimary() {
      const port = await redisPrimaryPort();
      const node = REDIS_NODES[port];
      if (node === undefined) throw new Error(`Sentinel names 127.0.0.1:${port} primary, not a node of the cluster`);
      return node;
    },
    async flushRedis() {
      const primary = new Redis({ port: await redisPrimaryPort(), host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
      primary.on('error', () => undefined);
      try {
        await primary.connect();
        await primary.flushall();
      } finally {
        primary.disconnect();
      }
    },
    describe: () => ({ kafka: KAFKA_BROKERS, elasticsearch: ELASTICSEARCH_NODES, sentinels: SENTINELS, env: CLUSTER_ENV }),
  };
}
