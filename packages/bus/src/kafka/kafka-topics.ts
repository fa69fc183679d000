/**
 * The topics a bus uses: created (with their `.dlq`) and grown through the admin client, and
 * their partition counts cached so that `partitionFor` can answer synchronously as the port
 * requires. ensureTopics records what it created or grew; any other topic is looked up once
 * on first use (a topic grown by another process is seen after this bus's next ensureTopics).
 */
import { GovernedMemoryError } from '@gm/contracts';
import type { Admin } from 'kafkajs';
import { errorMessage } from '../bus-logger.ts';
import { partitionForKey } from '../partitioner.ts';
import { PartitionCountMismatchError } from '../partition-count.ts';
import type { TopicSpec } from '../port.ts';
import { unknownTopic, type Namespace } from './kafka-codec.ts';

type Wanted = Map<string, { partitions: number; compacted: boolean; config?: Record<string, string> }>;

/** How the deployment replicates the topics it creates (absent: the broker's defaults apply). */
export interface TopicReplication {
  factor: number;
  /** `min.insync.replicas` of each topic: how many replicas an acknowledged write is on. */
  minInsyncReplicas: number;
}

export class Topics {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly admin: () => Promise<Admin>,
    private readonly ns: Namespace,
    private readonly replication?: TopicReplication,
  ) {}

  /** Creates missing topics and their `.dlq`; refuses another count for an existing one. Idempotent. */
  async ensure(specs: readonly TopicSpec[]): Promise<void> {
    const wanted: Wanted = new Map();
    for (const spec of specs) {
      if (typeof spec.name !== 'string' || spec.name.length === 0) throw new GovernedMemoryError('MEM_VALIDATION', 'topic names must be non-empty strings');
      if (!Number.isInteger(spec.partitions) || spec.partitions < 1) {
        throw new GovernedMemoryError('MEM_VALIDATION', `topic "${spec.name}": partitions must be a positive integer`);
      }
      wanted.set(spec.name, { partitions: spec.partitions, compacted: spec.compacted === true, ...(spec.config ? { config: spec.config } : {}) });
      // Dead letters are never compacted: two poison messages with one key must both stay.
      if (spec.deadLetters !== false && !wanted.has(`${spec.name}.dlq`)) {
        wanted.set(`${spec.name}.dlq`, { partitions: spec.partitions, compacted: false, ...(spec.deadLetterConfig ? { config: spec.deadLetterConfig } : {}) });
      }
    }
    try {
      await this.apply(wanted);
    } catch (err) {
      if (err instanceof PartitionCountMismatchError || isConfigurationError(err)) throw err;
      // Another process may have created some of them between our listing and our request.
      await this.apply(wanted);
    }
  }

  /** Like the embedded log: a consumer of an undeclared topic still gets its `.dlq`. */
  async ensureDeadLetter(topic: string): Promise<void> {
    const dlq = `${topic}.dlq`;
    const exists = await this.count(dlq).then(
      () => true,
      () => false,
    );
    if (!exists) await this.apply(new Map([[dlq, { partitions: await this.count(topic), compacted: false }]]));
  }

  /** The count of a topic this bus has seen; throws for one it has not (it may not exist). */
  known(topic: string): number {
    const count = this.counts.get(topic);
    if (count === undefined) {
      throw new GovernedMemoryError('MEM_VALIDATION', `unknown topic "${topic}" (call ensureTopics, or use the topic once, before partitionFor)`);
    }
    return count;
  }

  /** Looks the topic up in the cluster when not cached; MEM_VALIDATION when it does not exist. */
  async count(topic: string): Promise<number> {
    const cached = this.counts.get(topic);
    if (cached !== undefined) return cached;
    const admin = await this.admin();
    const kafkaTopic = this.ns.topic(topic);
    // Listing first: kafkajs retries a metadata request for a missing topic for seconds.
    if (!(await admin.listTopics()).includes(kafkaTopic)) throw unknownTopic(topic);
    const { topics } = await admin.fetchTopicMetadata({ topics: [kafkaTopic] });
    const count = topics.find((t) => t.name === kafkaTopic)?.partitions.length ?? 0;
    if (count === 0) throw unknownTopic(topic);
    this.record(topic, count);
    return count;
  }

  async partitionFor(topic: string, key: string): Promise<number> {
    return partitionForKey(key, await this.count(topic));
  }

  private record(topic: string, partitions: number): void {
    this.counts.set(topic, Math.max(partitions, this.counts.get(topic) ?? 0));
  }

  private async apply(wanted: Wanted): Promise<void> {
    const admin = await this.admin();
    const existing = new Set(await admin.listTopics());
    // Existing topics first: a mismatch must stop before anything is created.
    const present = [...wanted].filter(([name]) => existing.has(this.ns.topic(name)));
    if (present.length > 0) {
      const { topics } = await admin.fetchTopicMetadata({ topics: present.map(([name]) => this.ns.topic(name)) });
      for (const [name, spec] of present) {
        const count = topics.find((t) => t.name === this.ns.topic(name))?.partitions.length ?? 0;
        if (count !== spec.partitions) throw new PartitionCountMismatchError(name, count, spec.partitions);
        this.record(name, count);
      }
    }
    const missing = [...wanted].filter(([name]) => !existing.has(this.ns.topic(name)));
    if (missing.length === 0) return;
    const replication = this.replication;
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map(([name, spec]) => ({
          topic: this.ns.topic(name),
          numPartitions: spec.partitions,
          ...(replication ? { replicationFactor: replication.factor } : {}),
          configEntries: [
            ...(spec.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : []),
            ...(replication ? [{ name: 'min.insync.replicas', value: String(replication.minInsyncReplicas) }] : []),
            ...Object.entries(spec.config ?? {}).map(([name, value]) => ({ name, value })),
          ],
        })),
      });
    } catch (err) {
      if (replication === undefined || !brokerErrorTypes(err).includes('INVALID_REPLICATION_FACTOR')) throw err;
      throw new GovernedMemoryError(
        'MEM_VALIDATION',
        `cannot create topics with replication factor ${replication.factor} (MEMORY_KAFKA_REPLICATION_FACTOR; more than the cluster's brokers?): ${errorText(err)}`,
      );
    }
    for (const [name, spec] of missing) this.record(name, spec.partitions);
  }
}

/** A kafkajs error and the broker's errors it wraps (an aggregate holds one per topic). */
const withNested = (err: unknown): unknown[] => [err, ...((err as { errors?: unknown[] }).errors ?? [])];
const brokerErrorTypes = (err: unknown): unknown[] => withNested(err).map((e) => (e as { type?: unknown }).type);
const errorText = (err: unknown): string => withNested(err).map(errorMessage).join('; ');

/** A setting the cluster cannot honour: said as it is, not retried and not reported as an outage. */
export const isConfigurationError = (err: unknown): boolean => err instanceof GovernedMemoryError && err.code === 'MEM_VALIDATION';
