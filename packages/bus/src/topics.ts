import { TOPICS, ingestResultsTopic } from '@gm/contracts';
import type { TopicSpec } from './port.ts';

/**
 * Every topic of design §4 with one partition count: commands and events must be
 * co-partitioned (same key, same count), so one write-admission partition owns a subject.
 */
/**
 * memory.keys compaction (§8.5): a destroyed key is a marker record under the key's id, and
 * compaction then drops every older record of that id — the wrapped key itself. Kafka rolls the
 * active segment and makes the log cleanable once a record is older than max.compaction.lag.ms,
 * so the wrapped key is physically gone from each broker's segments within about one hour plus
 * the cleaner's backoff (log.cleaner.backoff.ms, 15 s by default), as long as the cleaner keeps up.
 * The marker itself is kept for good (it is not a null tombstone): it is what keeps the
 * destruction final for every later reader.
 */
export const KEYS_TOPIC_CONFIG: Record<string, string> = {
  'segment.ms': String(60 * 60 * 1000),
  'max.compaction.lag.ms': String(60 * 60 * 1000),
  'min.cleanable.dirty.ratio': '0.01',
};

export const keysTopicSpec = (partitions: number): TopicSpec => ({ name: TOPICS.keys, partitions, compacted: true, config: KEYS_TOPIC_CONFIG });

/**
 * memory.ingest holds what platforms produce, content in clear (docs/ingest.md): it is a queue, not a
 * record of anything, so it and its dead letters keep messages for a bounded time only. The
 * bound must outlast any ingest-gateway outage (a message older than it is gone unread), which
 * is why it is a day, and why docs/known-limits.md names it as a copy outside deletion.
 */
export const INGEST_RETENTION_MS = 24 * 60 * 60 * 1000;
const ingestConfig = (retentionMs: number): Record<string, string> => ({
  'retention.ms': String(retentionMs),
  // Kafka deletes whole segments only: a segment rolls at least this often so none outlives the bound by much.
  'segment.ms': String(Math.max(60_000, Math.floor(retentionMs / 24))),
});

/**
 * memory.events and policy.changes are the sources of truth every projection is folded from
 * (design §4): they keep every record for good, whatever the broker's default retention.
 * A deletion never needs their records gone: it destroys the keys that seal their content (§8.5).
 */
export const KEPT_FOREVER_CONFIG: Record<string, string> = { 'retention.ms': '-1', 'retention.bytes': '-1' };
export const KEPT_FOREVER_TOPICS: readonly string[] = [TOPICS.events, TOPICS.policyChanges];

export function memoryTopicSpecs(partitions: number, ingestRetentionMs = INGEST_RETENTION_MS): TopicSpec[] {
  return [
    { name: TOPICS.commands, partitions },
    { name: TOPICS.events, partitions, config: KEPT_FOREVER_CONFIG },
    { name: TOPICS.replies, partitions },
    { name: TOPICS.records, partitions, compacted: true },
    { name: TOPICS.policyChanges, partitions, config: KEPT_FOREVER_CONFIG },
    { name: TOPICS.deletionTasks, partitions },
    { name: TOPICS.deletionAcks, partitions },
    { name: TOPICS.deletionReceipts, partitions },
    keysTopicSpec(partitions),
    { name: TOPICS.ingest, partitions, config: ingestConfig(ingestRetentionMs), deadLetterConfig: ingestConfig(ingestRetentionMs) },
  ];
}

/**
 * A tenant's ingest results topic (design §4.1), created by the ingest-gateway on the tenant's
 * first verified request. One partition: results need no co-partitioning (their key is the
 * producer's requestId) and a partition per tenant is what a deployment with many tenants can
 * afford; an operator may add partitions to a busy tenant's topic, the gateway takes any count.
 * No `.dlq`: the deployment never consumes it.
 */
export const ingestResultsTopicSpec = (tenant: string): TopicSpec => ({ name: ingestResultsTopic(tenant), partitions: 1, deadLetters: false });
