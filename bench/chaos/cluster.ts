/**
 * The local cluster the fault suite runs on (infra/local, `engines.sh start --cluster`;
 * docs/reliability.md "Local cluster"): its addresses as the services' env, and its nodes as
 * processes to kill, freeze and restart.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The services' env on the cluster: production mode, so they refuse under-replicated topics. */
export const CLUSTER_ENV: Record<string, string> = {
  KAFKA_BROKERS: '127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094',
  ELASTICSEARCH_URL: 'http://127.0.0.1:29200,http://127.0.0.1:29201',
  REDIS_SENTINELS: '127.0.0.1:26479,127.0.0.1:26480,127.0.0.1:26481',
  REDIS_SENTINEL_NAME: 'gm-primary',
  MEMORY_KAFKA_REPLICATION_FACTOR: '3',
  MEMORY_KAFKA_MIN_INSYNC_REPLICAS: '2',
  MEMORY_ELASTICSEARCH_REPLICAS: '1',
  MEMORY_PRODUCTION: 'true',
};

export type NodeSignal = 'KILL' | 'STOP' | 'CONT' | 'TERM';

export interface ClusterControl {
  /** Starts every node (idempotent) and waits until the cluster is healthy. */
  start(): void;
  stop(): void;
  /** Signals one node's process (kafka-1…3, es-1…2, redis-1…2 by port order). */
  signal(node: string, signal: NodeSignal): void;
  /** Starts a stopped or killed node again and waits until the whole cluster is healthy. */
  restart(node: string): void;
  /** Waits until every node is up and caught up (Kafka: no under-replicated partition; ES green; the Redis replica in sync). */
  waitHealthy(): void;
  elasticsearchNodeWithMostPrimaries(): string;
  /** The Redis node Sentinel names primary now. */
  redisPrimary(): string;
  describe(): Record<string, unknown>;
}

function launcher(args: string[]): string {
  const result = spawnSync('bash', [path.join(ROOT, 'infra/local/engines.sh'), ...args], {
    cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 10 * 60_000,
  });
  if (result.status !== 0) throw new Error(`infra/local/engines.sh ${args.join(' ')} exited with ${result.status ?? result.signal}`);
  return result.stdout;
}

export function clusterControl(): ClusterControl {
  const pidOf = (node: string): number => {
    const pid = Number(launcher(['pid', '--cluster', node]).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid for ${node}`);
    return pid;
  };
  return {
    start: () => process.stderr.write(launcher(['start', '--cluster'])),
    stop: () => process.stderr.write(launcher(['stop', '--cluster'])),
    signal: (node, signal) => process.kill(pidOf(node), `SIG${signal}`),
    restart: (node) => process.stderr.write(launcher(['start-node', '--cluster', node])),
    waitHealthy: () => process.stderr.write(launcher(['wait-healthy', '--cluster'])),
    elasticsearchNodeWithMostPrimaries: () => launcher(['es-primaries-node', '--cluster']).trim(),
    redisPrimary: () => launcher(['redis-primary', '--cluster']).trim(),
    describe: () => ({ env: CLUSTER_ENV }),
  };
}
