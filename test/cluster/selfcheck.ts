/**
 * Proves the local cluster (infra/local/cluster.sh, docs/reliability.md "Local cluster") does
 * what the fault suite relies on, through the adapters the services use and the env they read:
 *   1. Kafka: a topic at replication factor 3 / min.insync.replicas 2 takes a produce after
 *      `kill -9` of the broker leading its partition, and the record reads back;
 *   2. Redis: a state-store write succeeds after `kill -9` of the primary, once the Sentinels
 *      have failed over, and reads back;
 *   3. Elasticsearch: a search answers, with the document, after `kill -9` of a node.
 * Each killed node is started again before the next check, so the cluster ends as it began.
 *   node --import tsx test/cluster/selfcheck.ts        (or: infra/local/cluster.sh selfcheck)
 * Exit 0 when all three hold, 1 naming the first that did not. Needs a started cluster.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { openIndex, openState } from '@gm/adapters';
import { createKafkaBus } from '@gm/bus';
import { DistributedEnv, WithElasticsearch, WithRedis } from '@gm/config';
import type { IndexDocument } from '@gm/search-index';

const CLUSTER_SH = path.resolve(import.meta.dirname, '../../infra/local/cluster.sh');
/** How long a check waits for the cluster to recover before it fails (failover, election). */
const RECOVERY_DEADLINE_MS = 60_000;

/** The env a service of the stack would get on the cluster (docs/distributed.md). */
const CLUSTER_ENV = {
  KAFKA_BROKERS: '127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094',
  REDIS_SENTINELS: '127.0.0.1:26479,127.0.0.1:26480,127.0.0.1:26481',
  REDIS_SENTINEL_NAME: 'gm-primary',
  ELASTICSEARCH_URL: 'http://127.0.0.1:29200,http://127.0.0.1:29201',
  MEMORY_NAMESPACE: `selfcheck-${randomUUID().slice(0, 8)}`,
};
const env = { ...DistributedEnv.parse(CLUSTER_ENV), ...WithRedis.parse(CLUSTER_ENV), ...WithElasticsearch.parse(CLUSTER_ENV) };

const say = (line: string): void => {
  process.stdout.write(`[selfcheck] ${line}\n`);
};

function cluster(...args: string[]): string {
  return execFileSync(CLUSTER_SH, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** Runs `attempt` until it resolves, or fails with its last error after the deadline. */
async function untilItWorks<T>(what: string, attempt: () => Promise<T>): Promise<{ value: T; ms: number; attempts: number }> {
  const began = Date.now();
  let attempts = 0;
  for (;;) {
    attempts += 1;
    try {
      return { value: await attempt(), ms: Date.now() - began, attempts };
    } catch (err) {
      if (Date.now() - began > RECOVERY_DEADLINE_MS) {
        throw new Error(`${what}: still failing after ${RECOVERY_DEADLINE_MS} ms (${attempts} attempts): ${err instanceof Error ? err.message : String(err)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function checkKafka(): Promise<void> {
  const topic = 'selfcheck';
  const bus = createKafkaBus({
    brokers: env.KAFKA_BROKERS, clientId: 'cluster-selfcheck', topicPrefix: `${env.MEMORY_NAMESPACE}.`,
    replication: { factor: 3, minInsyncReplicas: 2 },
  });
  const admin = new Kafka({ clientId: 'cluster-selfcheck-admin', brokers: env.KAFKA_BROKERS, logLevel: logLevel.NOTHING }).admin();
  let killed: string | undefined;
  try {
    await bus.ensureTopics([{ name: topic, partitions: 1 }]);
    await bus.produce([{ topic, key: 'before', value: { n: 1 } }]);
    await admin.connect();
    const [metadata] = (await admin.fetchTopicMetadata({ topics: [`${env.MEMORY_NAMESPACE}.${topic}`] })).topics;
    const partition = metadata?.partitions[0];
    if (partition?.replicas.length !== 3) throw new Error(`kafka: the topic has ${partition?.replicas.length ?? 0} replicas, not 3`);
    killed = `kafka-${partition.leader}`;
    cluster('kill-node', killed);
    const { ms, attempts } = await untilItWorks('kafka produce after the leader died', () => bus.produce([{ topic, key: 'after', value: { n: 2 } }]));
    const keys: string[] = [];
    for await (const message of bus.readAll(topic)) keys.push(message.key);
    if (keys.join(',') !== 'before,after') throw new Error(`kafka: read back [${keys.join(',')}], not [before,after]`);
    say(`kafka: killed ${killed} (leader of the RF-3 partition); a produce was acknowledged ${ms} ms later (${attempts} attempt(s)); both records read back`);
  } finally {
    if (killed !== undefined) cluster('start-node', killed);
    const prefixed = `${env.MEMORY_NAMESPACE}.${topic}`;
    await admin.deleteTopics({ topics: [prefixed, `${prefixed}.dlq`] }).catch(() => undefined);
    await admin.disconnect();
    await bus.close();
  }
}

/** The node name of the Redis the Sentinels name as primary now. */
function redisPrimaryNode(): string {
  const answer = execFileSync('redis-cli', ['-p', '26479', 'sentinel', 'get-master-addr-by-name', 'gm-primary'], { encoding: 'utf8' });
  const port = answer.trim().split('\n')[1]?.trim();
  if (port === '26379') return 'redis-primary';
  if (port === '26380') return 'redis-replica';
  throw new Error(`redis: the Sentinels name no known primary (${answer.trim() || 'no answer'})`);
}

async function checkRedis(): Promise<void> {
  const state = openState(env);
  const key = `selfcheck:${randomUUID()}`;
  let killed: string | undefined;
  try {
    await state.kv.set(key, 'before');
    killed = redisPrimaryNode();
    cluster('kill-node', killed);
    const { ms, attempts } = await untilItWorks('redis write after the primary died', () => state.kv.set(key, 'after'));
    const read = await state.kv.get(key);
    if (read !== 'after') throw new Error(`redis: read back ${String(read)}, not "after"`);
    say(`redis: killed ${killed} (the primary); a state-store write succeeded ${ms} ms later (${attempts} attempt(s)), on ${redisPrimaryNode()}`);
    await state.kv.del([key]);
  } finally {
    await state.kv.close();
    if (killed !== undefined) cluster('start-node', killed);
  }
}

const document = (content: string): IndexDocument => ({
  tenantId: 'selfcheck', recordId: 'r1', partition: 'p1', subjectId: 's1', kind: 'fact', purposes: ['support'],
  content, contentHash: 'h1', confidence: 1, createdAt: '2026-01-01T00:00:00.000Z', expiresAt: '2999-01-01T00:00:00.000Z',
  version: 1, provenance: [{ source: 'user', observedAt: '2026-01-01T00:00:00.000Z' }],
});

/** The node the cluster has not elected master: killing it keeps the cluster able to promote replicas. */
async function elasticsearchNonMaster(): Promise<string> {
  const response = await fetch('http://127.0.0.1:29200/_cat/master?h=node');
  const master = (await response.text()).trim();
  return master === 'es-1' ? 'es-2' : 'es-1';
}

async function checkElasticsearch(): Promise<void> {
  const index = openIndex(env);
  let killed: string | undefined;
  const query = { tenantId: 'selfcheck', partitions: ['p1'], purpose: 'support', now: '2026-06-01T00:00:00.000Z', text: 'lighthouse', limit: 5 };
  try {
    await index.upsert([document('the keeper of the lighthouse')]);
    await untilItWorks('the document searchable', async () => {
      if ((await index.search(query)).length !== 1) throw new Error('not found yet');
    });
    killed = await elasticsearchNonMaster();
    cluster('kill-node', killed);
    const { value: hits, ms, attempts } = await untilItWorks('search after a node died', () => index.search(query));
    if (hits[0]?.doc.recordId !== 'r1') throw new Error(`elasticsearch: the search found ${hits.length} hit(s), not the document`);
    say(`elasticsearch: killed ${killed}; a search answered with the document ${ms} ms later (${attempts} attempt(s))`);
    await index.clear();
  } finally {
    await index.close();
    if (killed !== undefined) cluster('start-node', killed);
  }
}

try {
  await checkKafka();
  await checkRedis();
  await checkElasticsearch();
  say('all three hold');
} catch (err) {
  say(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
