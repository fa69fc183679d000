import { Client } from '@elastic/elasticsearch';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import type { Engines } from './engines.ts';

/**
 * Removes what this run created on the shared engines, by namespace: Kafka topics and groups
 * `<ns>.*`, Elasticsearch indices `gm-<ns>-*`, Redis keys `gm:<ns>:*`. Each engine is swept
 * on its own, so one failing does not leave the others dirty; failures are reported.
 */
export async function sweepNamespace(engines: Engines, namespace: string): Promise<string[]> {
  const notes: string[] = [];
  const attempt = async (what: string, fn: () => Promise<string>) => {
    try {
      notes.push(`${what}: ${await fn()}`);
    } catch (err) {
      notes.push(`${what}: FAILED ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  await attempt('kafka', async () => {
    const admin = new Kafka({ clientId: `${namespace}-cleanup`, brokers: engines.kafkaBrokers.split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${namespace}.`));
      if (topics.length > 0) await admin.deleteTopics({ topics });
      const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`${namespace}.`));
      if (groups.length > 0) await admin.deleteGroups(groups);
      return `${topics.length} topics, ${groups.length} groups deleted`;
    } finally {
      await admin.disconnect();
    }
  });

  await attempt('elasticsearch', async () => {
    const es = new Client({ node: engines.elasticsearchUrl, maxRetries: 0 });
    try {
      // By exact name: wildcard deletes are refused by default (action.destructive_requires_name).
      const names = Object.keys(await es.indices.get({ index: `gm-${namespace}-*`, allow_no_indices: true, ignore_unavailable: true }));
      for (const index of names) await es.indices.delete({ index });
      return `${names.length} indices deleted`;
    } finally {
      await es.close();
    }
  });

  await attempt('redis', async () => {
    const redis = new Redis(engines.redisUrl, { lazyConnect: true });
    await redis.connect();
    try {
      let deleted = 0;
      let cursor = '0';
      do {
        const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `gm:${namespace}:*`, 'COUNT', 1000);
        cursor = nextCursor;
        if (keys.length > 0) deleted += await redis.del(...keys);
      } while (cursor !== '0');
      return `${deleted} keys deleted`;
    } finally {
      redis.disconnect();
    }
  });
  return notes;
}
