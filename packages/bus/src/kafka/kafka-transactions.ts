/**
 * Appending to Kafka: routing messages to partitions with the port's partitioner, running a
 * transaction (optionally with a consumer group's offset), and waiting until what a
 * transaction wrote is visible — EndTxn returns before the transaction markers are written,
 * and a read_committed reader or an offset fetch right after it could still miss the result.
 */
import { Partitioners, type Admin, type Kafka, type Message, type Producer, type RecordMetadata, type TopicMessages } from 'kafkajs';
import { errorMessage, type BusLogger } from '../bus-logger.ts';
import type { LogPosition } from '../port.ts';
import { delay, toRecord, withMetadataRetry, type EncodedMessage, type Namespace } from './kafka-codec.ts';
import type { Topics } from './kafka-topics.ts';

/** Offsets a transaction commits for a consumer group, next to its messages (if any). */
export interface GroupOffsets {
  groupId: string;
  kafkaTopic: string;
  partitions: Array<{ partition: number; offset: number }>;
}

/** Messages grouped per Kafka partition, each group in input order. */
export interface Routed {
  topicMessages: TopicMessages[];
  /** Per message, in input order: its partition group key and index within the group. */
  slots: Array<{ topic: string; partition: number; key: string; index: number }>;
  groups: Map<string, { kafkaTopic: string; partition: number; count: number }>;
}

/** Bounded: a committed transaction becomes visible; waiting longer only delays the caller. */
const VISIBILITY_TIMEOUT_MS = 10_000;
/** Short enough to keep a produce under a dozen ms; markers usually land within a few. */
const TRANSACTION_TIMEOUT_MS = 20_000;

export class TransactionRunner {
  constructor(
    private readonly kafka: Kafka,
    private readonly admin: () => Promise<Admin>,
    private readonly topics: Topics,
    private readonly ns: Namespace,
    private readonly logger: BusLogger,
  ) {}

  /** A connected producer; transactional when an id is given, idempotent either way. */
  async connect(transactionalId?: string): Promise<Producer> {
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // Partitions are always given explicitly; this only silences kafkajs's v2 notice.
      createPartitioner: Partitioners.DefaultPartitioner,
      ...(transactionalId === undefined ? {} : { transactionalId, transactionTimeout: TRANSACTION_TIMEOUT_MS }),
    });
    await producer.connect();
    return producer;
  }

  /**
   * Initialises the producer's transactional id (an empty transaction sends no EndTxn): the
   * coordinator bumps the epoch — fencing any other producer with that id — after aborting
   * or completing its open transaction.
   */
  async fence(producer: Producer): Promise<void> {
    const transaction = await producer.transaction();
    await transaction.abort();
  }

  /** Partitions per message; throws MEM_VALIDATION for an unknown topic, before sending. */
  async route(messages: readonly EncodedMessage[]): Promise<Routed> {
    const byTopic = new Map<string, Message[]>();
    const groups: Routed['groups'] = new Map();
    const slots: Routed['slots'] = [];
    for (const m of messages) {
      const partition = await this.topics.partitionFor(m.topic, m.key);
      const kafkaTopic = this.ns.topic(m.topic);
      const key = `${kafkaTopic}\u0000${partition}`;
      const group = groups.get(key) ?? { kafkaTopic, partition, count: 0 };
      groups.set(key, group);
      slots.push({ topic: m.topic, partition, key, index: group.count });
      group.count += 1;
      const list = byTopic.get(kafkaTopic) ?? [];
      list.push(toRecord(m, partition));
      byTopic.set(kafkaTopic, list);
    }
    return { topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })), slots, groups };
  }

  /** One record batch per partition in a single produce request: atomic when it is one partition. */
  async send(producer: Producer, routed: Routed): Promise<LogPosition[]> {
    return positions(routed, await producer.sendBatch({ topicMessages: routed.topicMessages }));
  }

  /**
   * Sends the messages and commits `offsets` for their group in one transaction, then waits
   * until all of it is visible. On failure the transaction is aborted and the error rethrown.
   */
  async commit(
    producer: Producer, routed: Routed, offsets?: GroupOffsets, then?: (written: readonly LogPosition[]) => EncodedMessage[],
  ): Promise<LogPosition[]> {
    const transaction = await producer.transaction();
    let written: LogPosition[] = [];
    try {
      if (routed.slots.length > 0) written = positions(routed, await transaction.sendBatch({ topicMessages: routed.topicMessages }));
      // Messages that name where the first ones landed: a second batch in the same transaction.
      const more = then === undefined ? [] : then(written);
      if (more.length > 0) {
        const routedMore = await this.route(more);
        written = [...written, ...positions(routedMore, await transaction.sendBatch({ topicMessages: routedMore.topicMessages }))];
      }
      if (offsets !== undefined) {
        await transaction.sendOffsets({
          consumerGroupId: offsets.groupId,
          topics: [{ topic: offsets.kafkaTopic, partitions: offsets.partitions.map((p) => ({ partition: p.partition, offset: String(p.offset) })) }],
        });
      }
      await transaction.commit();
    } catch (err) {
      // Best effort: a fenced producer cannot abort, and the coordinator aborts on timeout.
      if (transaction.isActive()) await transaction.abort().catch(() => undefined);
      throw err;
    }
    await this.awaitVisible(written, offsets);
    return written;
  }

  /** Polls until read_committed readers see every written message and the group its offset. */
  private async awaitVisible(written: readonly LogPosition[], offsets: GroupOffsets | undefined): Promise<void> {
    const lastOffset = new Map<string, Map<number, number>>();
    for (const p of written) {
      const perTopic = lastOffset.get(p.topic) ?? new Map<number, number>();
      perTopic.set(p.partition, Math.max(perTopic.get(p.partition) ?? -1, p.offset));
      lastOffset.set(p.topic, perTopic);
    }
    const admin = await this.admin();
    const deadline = performance.now() + VISIBILITY_TIMEOUT_MS;
    let lastError: unknown;
    for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
      const pending: Array<Promise<boolean>> = [...lastOffset].map(async ([topic, perPartition]) => {
        const ends = await withMetadataRetry(() => admin.fetchTopicOffsets(this.ns.topic(topic)));
        return [...perPartition].every(([partition, last]) => Number(ends.find((e) => e.partition === partition)?.offset ?? -1) > last);
      });
      if (offsets !== undefined) {
        pending.push(
          admin.fetchOffsets({ groupId: offsets.groupId, topics: [offsets.kafkaTopic] }).then(([topic]) =>
            offsets.partitions.every(({ partition, offset }) => Number(topic?.partitions.find((p) => p.partition === partition)?.offset ?? -1) >= offset),
          ),
        );
      }
      // The transaction is committed: a read that fails here (a leader or coordinator moving,
      // a broker that hangs) is "not visible yet", never a failed commit. Thrown, it failed the
      // batch after its commit, and the partition was fenced and refetched all over again.
      try {
        if ((await Promise.all(pending)).every(Boolean)) return;
      } catch (err) {
        lastError = err;
      }
      if (performance.now() > deadline) {
        this.logger.warn(
          { topics: [...lastOffset.keys()], waitedMs: VISIBILITY_TIMEOUT_MS, ...(lastError === undefined ? {} : { err: errorMessage(lastError) }) },
          'kafka transaction committed but not yet visible',
        );
        return;
      }
      await delay(wait);
    }
  }
}

function positions(routed: Routed, metadata: readonly RecordMetadata[]): LogPosition[] {
  const base = new Map<string, number>();
  for (const m of metadata) base.set(`${m.topicName}\u0000${m.partition}`, Number(m.baseOffset ?? m.offset ?? Number.NaN));
  return routed.slots.map((slot) => {
    const first = base.get(slot.key);
    if (first === undefined || Number.isNaN(first)) throw new Error(`kafka returned no offset for ${slot.topic}[${slot.partition}]`);
    return { topic: slot.topic, partition: slot.partition, offset: first + slot.index };
  });
}
