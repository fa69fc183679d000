import { createKafkaBus, memoryTopicSpecs, type Bus } from '@gm/bus';
import { createElasticsearchSearchIndex, createElasticsearchSummaryStore, type SearchIndex, type SummaryStore } from '@gm/search-index';
import { StateStore, createRedisKeyValueStore } from '@gm/state-store';
import { z } from 'zod';
import type { Clock } from '@gm/contracts';
import { LogLevel, integer } from './env.ts';

export const systemClock: Clock = { now: () => new Date() };


/** Environment every distributed service reads (design §11 names the engine variables). */
export const DistributedEnv = z.object({
  KAFKA_BROKERS: z
    .string()
    .min(1, 'comma-separated host:port list')
    .transform((v) => v.split(',').map((b) => b.trim()).filter(Boolean)),
  MEMORY_PARTITIONS: integer(4, 1, 256),
  MEMORY_LOG_LEVEL: LogLevel.default('info'),
  HEALTH_PORT: integer(0, 0, 65535),
  /** Isolates a deployment (or a test run) sharing engines: topics, key space and indices. */
  MEMORY_NAMESPACE: z.string().regex(/^[a-z0-9-]*$/, 'lower-case letters, digits and -').default(''),
});
export type DistributedEnv = z.infer<typeof DistributedEnv>;

export const WithRedis = z.object({ REDIS_URL: z.string().url() });
export const WithElasticsearch = z.object({ ELASTICSEARCH_URL: z.string().url() });

export async function openBus(env: DistributedEnv, clientId: string): Promise<Bus> {
  const bus = createKafkaBus({
    brokers: env.KAFKA_BROKERS,
    clientId,
    topicPrefix: env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}.` : '',
    transactionalIdPrefix: env.MEMORY_NAMESPACE ? `gm.${env.MEMORY_NAMESPACE}` : 'gm',
  });
  await bus.ensureTopics(memoryTopicSpecs(env.MEMORY_PARTITIONS));
  return bus;
}

export function openState(env: DistributedEnv & z.infer<typeof WithRedis>, nowMs: () => number = Date.now): StateStore {
  const kv = createRedisKeyValueStore({ url: env.REDIS_URL });
  return new StateStore(kv, `gm:${env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}:` : ''}`, nowMs);
}

export function openIndex(env: DistributedEnv & z.infer<typeof WithElasticsearch>): SearchIndex {
  return createElasticsearchSearchIndex({ node: env.ELASTICSEARCH_URL, indexPrefix: env.MEMORY_NAMESPACE ? `gm-${env.MEMORY_NAMESPACE}` : 'gm' });
}

/** The summary store beside the search index: `<prefix>-summaries` under the same prefix. */
export function openSummaries(env: DistributedEnv & z.infer<typeof WithElasticsearch>): SummaryStore {
  return createElasticsearchSummaryStore({ node: env.ELASTICSEARCH_URL, indexPrefix: env.MEMORY_NAMESPACE ? `gm-${env.MEMORY_NAMESPACE}` : 'gm' });
}
