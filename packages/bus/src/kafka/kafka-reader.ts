/**
 * Reads one partition from an offset up to an end offset fixed by the caller, through a
 * short-lived read_committed consumer: kafkajs has no manual assignment, so the reader joins a
 * throwaway group whose assigner hands it exactly that partition, and deletes the group after.
 * Transaction markers and aborted records are skipped by kafkajs; offsets of what is yielded
 * therefore increase strictly but are not dense.
 */
import { randomUUID } from 'node:crypto';
import { GovernedMemoryError } from '@gm/contracts';
import { AssignerProtocol, type Admin, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { ConsumedMessage } from '../port.ts';
import { decodeMessage, unavailable, type Namespace } from './kafka-codec.ts';

export interface ReadRange {
  /** Kafka topic name and the port's name for the messages yielded. */
  kafkaTopic: string;
  topic: string;
  partition: number;
  /** First offset wanted (inclusive) and the end captured before reading (exclusive). */
  from: number;
  end: number;
  /** The partition's first offset still in the log: no seek is needed at or below it. */
  low: number;
}

/**
 * No batch for this long while the captured end is not reached means the broker is stuck (its
 * leader or the reader's group coordinator died): the read fails retriably and its caller reads
 * again, against the cluster's new leaders. Longer than a throwaway group's join on a loaded
 * machine; much shorter than the 30 s it was, which the fault suite's broker kill spent waiting.
 */
const STALL_TIMEOUT_MS = 10_000;

export async function* readRange(kafka: Kafka, admin: Admin, ns: Namespace, range: ReadRange): AsyncGenerator<ConsumedMessage> {
  const groupId = ns.group(`gm-reader.${randomUUID()}`);
  const channel = new Channel<ConsumedMessage[]>();
  let next = range.from;
  const consumer = kafka.consumer({
    groupId,
    partitionAssigners: [onlyPartition(range.kafkaTopic, range.partition)],
    allowAutoTopicCreation: false,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
  });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    // Also fires for batches that held only markers or aborted records (never in eachBatch).
    if (payload.partition === range.partition && Number(payload.lastOffset) + 1 >= range.end) channel.close();
  });
  // What a stall says about where the read got to: joining its group, or fetching.
  let joined = false;
  // Seeking as the member joins places the first fetch; kafkajs has no assignment before that.
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joined = true;
    if (range.from > range.low) consumer.seek({ topic: range.kafkaTopic, partition: range.partition, offset: String(range.from) });
  });
  // A retriable crash (a coordinator still loading on a fresh broker) is restarted by kafkajs.
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) channel.fail(unavailable(`reading ${range.topic}[${range.partition}]`, payload.error));
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [range.kafkaTopic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const wanted: ConsumedMessage[] = [];
        for (const record of batch.messages) {
          const offset = Number(record.offset);
          // A fetch that raced the seek, or a refetch after a restart, repeats offsets.
          if (offset < next || offset >= range.end) continue;
          next = offset + 1;
          wanted.push(decodeMessage(range.topic, batch.partition, record));
        }
        // Waits until the reader took them: a large partition is never held in memory at once.
        if (wanted.length > 0) await channel.push(wanted);
      },
    });
    for (;;) {
      const page = await channel.take(STALL_TIMEOUT_MS, () => (joined ? `joined; next offset ${next} of ${range.end}` : 'its throwaway group not joined yet'));
      if (page === undefined) break;
      yield* page;
    }
  } catch (err) {
    throw unavailable(`reading ${range.topic}[${range.partition}]`, err);
  } finally {
    channel.close();
    await consumer.disconnect().catch(() => undefined);
    // An empty group without offsets would linger in listings until the broker expires it.
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
}

/** Assigns `partition` of `topic` to the first member and nothing to anyone else. */
function onlyPartition(topic: string, partition: number): PartitionAssigner {
  const name = 'GmSinglePartition';
  return () => ({
    name,
    version: 1,
    async assign({ members }) {
      return members.map((member, i) => ({
        memberId: member.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: i === 0 ? { [topic]: [partition] } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return { name, metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) };
    },
  });
}

/** A one-slot hand-over between kafkajs's eachBatch and the async generator. */
class Channel<T> {
  private item: { value: T; taken: () => void } | undefined;
  private waiter: (() => void) | undefined;
  private closed = false;
  private error: unknown;

  push(value: T): Promise<void> {
    return new Promise((taken) => {
      if (this.closed) return taken();
      this.item = { value, taken };
      this.wake();
    });
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  fail(err: unknown): void {
    this.error ??= err;
    this.close();
  }

  /** The next item; undefined once closed and drained. Throws after a failure or a stall (`where`: the reader's progress, for the error). */
  async take(stallTimeoutMs: number, where: () => string): Promise<T | undefined> {
    for (;;) {
      if (this.error !== undefined) throw this.error;
      const item = this.item;
      if (item !== undefined) {
        this.item = undefined;
        item.taken();
        return item.value;
      }
      if (this.closed) return undefined;
      let timer: NodeJS.Timeout | undefined;
      const stalled = await new Promise<boolean>((resolve) => {
        this.waiter = () => resolve(false);
        timer = setTimeout(() => resolve(true), stallTimeoutMs);
      });
      clearTimeout(timer);
      this.waiter = undefined;
      if (stalled) throw new GovernedMemoryError('MEM_UNAVAILABLE', `kafka: no data for ${stallTimeoutMs} ms before the end of the range (${where()})`, { retriable: true });
    }
  }

  private wake(): void {
    this.waiter?.();
  }
}
