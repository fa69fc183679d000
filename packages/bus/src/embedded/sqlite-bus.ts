/**
 * The embedded bus: the Kafka-shaped log of `port.ts` in one durable SQLite file.
 *
 * - `createSqliteBus` is synchronous: it opens (or creates) the file, and its parent folder,
 *   before returning, so a bad path fails at start-up rather than on the first produce.
 * - Produces are group-committed: the calls made within one turn of the event loop are appended
 *   in one durable (synchronous=FULL) transaction, so concurrent writers share one fsync. Each
 *   call is still all-or-nothing for its own messages, and a bad topic fails only its caller.
 * - Consumers are woken in-process right after a produce or commit, and only those reading a
 *   topic that was appended to, for the partitions that were; changes made by another process
 *   on the same file are picked up by polling every `pollIntervalMs` (default 200).
 * - readAll of a compacted topic returns only the latest message per key (per partition, as
 *   Kafka compacts), in offset order. Other reads see every message; nothing is ever deleted.
 * - A handler that keeps failing is dead-lettered to `<topic>.dlq` with its original headers
 *   plus the `dlq.*` provenance headers. Closing a subscription during a retry back-off leaves
 *   that message uncommitted, so the next owner of the partition starts it again.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { resolve as resolvePath } from 'node:path';
import { validateSubscribeOptions } from '../messages.ts';
import { GovernedMemoryError } from '@gm/contracts';
import type { Bus, ConsumedMessage, LogPosition, OutgoingMessage, ReadOptions, SubscribeOptions, Subscription, TopicSpec } from '../port.ts';
import { stderrLogger, type BusLogger } from '../bus-logger.ts';
import { GroupConsumer } from './group-consumer.ts';
import { GroupCoordinator } from './group-coordinator.ts';
import { partitionForKey } from '../partitioner.ts';
import { Signal } from '../signal.ts';
import { serializeMessages, SqliteLog, type SerializedMessage } from './sqlite-log.ts';


export interface SqliteBusOptions {
  /** The database file; created with its folder if missing. */
  file: string;
  /** Partition count for a topic spec that comes without one (untyped config); default 1. */
  defaultPartitions?: number;
  /** How often idle consumers and waitForCommitted look for other processes' writes. */
  pollIntervalMs?: number;
  /** Receives retry, dead-letter and consumer-failure warnings; default: JSON lines on stderr. */
  logger?: BusLogger;
}

/** Rows per page when readAll walks a partition, so a large topic is never loaded at once. */
const READ_PAGE_SIZE = 500;

export function createSqliteBus(options: SqliteBusOptions): Bus {
  const pollIntervalMs = options.pollIntervalMs ?? 200;
  const defaultPartitions = options.defaultPartitions ?? 1;
  if (!Number.isFinite(pollIntervalMs) || pollIntervalMs <= 0) {
    throw new GovernedMemoryError('MEM_VALIDATION', `pollIntervalMs must be a positive number, got ${String(pollIntervalMs)}`);
  }
  if (!Number.isInteger(defaultPartitions) || defaultPartitions < 1) {
    throw new GovernedMemoryError('MEM_VALIDATION', `defaultPartitions must be a positive integer, got ${String(defaultPartitions)}`);
  }
  return new SqliteBus(new SqliteLog(options.file), {
    pollIntervalMs, defaultPartitions, logger: options.logger ?? stderrLogger, channel: options.file === ':memory:' ? undefined : `gm-bus:${resolvePath(options.file)}`,
  });
}

/** What one bus tells the others on its file: partitions appended to, and whether a group committed. */
interface Announcement {
  appended: Array<Pick<LogPosition, 'topic' | 'partition'>>;
  committed: boolean;
}

/** A produce call waiting for the next group commit. */
interface QueuedProduce {
  messages: SerializedMessage[];
  resolve(positions: LogPosition[]): void;
  reject(err: unknown): void;
}

class SqliteBus implements Bus {
  private readonly coordinator = new GroupCoordinator();
  private readonly committed = new Signal();
  private readonly queued: QueuedProduce[] = [];
  private flushScheduled = false;
  private readonly closingSignal = new Signal();
  private readonly consumers = new Set<GroupConsumer>();
  private closing = false;
  /** Groups of open transient subscriptions (SubscriptionSettings.transient): deleted when they close. */
  private readonly transientGroups = new Set<string>();
  private closed: Promise<void> | undefined;
  /**
   * Other buses of this process on the same file (another worker thread's) hear of our appends
   * and commits at once, and we of theirs; only other processes wait for the poll.
   */
  private readonly neighbours: BroadcastChannel | undefined;

  constructor(
    private readonly log: SqliteLog,
    private readonly settings: { pollIntervalMs: number; defaultPartitions: number; logger: BusLogger; channel: string | undefined },
  ) {
    if (settings.channel !== undefined) {
      const channel = new BroadcastChannel(settings.channel);
      channel.unref();
      channel.onmessage = (event) => {
        const { appended, committed } = (event as MessageEvent).data as Announcement;
        this.wake(appended, committed);
      };
      this.neighbours = channel;
    }
  }

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    this.assertOpen();
    this.log.ensureTopics(specs, this.settings.defaultPartitions);
    // A topic may have grown: members recompute their assignments.
    this.coordinator.changed.notify();
  }

  async produce(messages: OutgoingMessage[]): Promise<LogPosition[]> {
    this.assertOpen();
    if (messages.length === 0) return [];
    const serialized = serializeMessages(messages);
    // Checked now, so that one caller's unknown topic never fails the group commit of the others.
    for (const m of serialized) this.log.requireTopic(m.topic);
    return new Promise<LogPosition[]>((resolve, reject) => {
      this.queued.push({ messages: serialized, resolve, reject });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      // After the current turn: the produces that the I/O of this turn started travel together.
      setImmediate(() => this.flush());
    });
  }

  /** One FULL transaction for every queued produce; a failure of the log fails them all. */
  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queued.splice(0);
    if (batch.length === 0) return;
    let positions: LogPosition[][];
    try {
      positions = this.log.append(batch.map((q) => q.messages));
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    batch.forEach((q, i) => q.resolve(positions[i] ?? []));
    this.announce(positions.flat());
  }

  /** Wakes the consumers of what was appended (each remembers only those partitions) and the commit waiters. */
  private announce(appended: readonly LogPosition[], committed = false): void {
    this.neighbours?.postMessage({ appended: appended.map(({ topic, partition }) => ({ topic, partition })), committed } satisfies Announcement);
    this.wake(appended, committed);
  }

  private wake(appended: readonly Pick<LogPosition, 'topic' | 'partition'>[], committed: boolean): void {
    if (committed) this.committed.notify();
    for (const { topic, partition } of appended) {
      for (const consumer of this.consumers) consumer.appended(topic, partition);
    }
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    this.assertOpen();
    validateSubscribeOptions(options);
    for (const topic of options.topics) this.log.requireTopic(topic);
    if (options.transient === true) {
      // The group is this subscription's alone: a live member means another holder of the name.
      if (this.coordinator.hasMembers(options.groupId)) {
        throw new GovernedMemoryError('MEM_CONFLICT', `transient group "${options.groupId}" already has a subscription`);
      }
      // What a crashed predecessor committed is not ours to continue from.
      this.log.resetGroup(options.groupId);
      this.transientGroups.add(options.groupId);
    }
    if (options.fromBeginning === false) {
      this.log.commitEndOffsetsIfMissing(options.groupId, options.topics);
      this.committed.notify();
    }
    const consumer = new GroupConsumer(
      {
        log: this.log,
        coordinator: this.coordinator,
        onCommitted: (appended) => this.announce(appended, true),
        logger: this.settings.logger,
        pollIntervalMs: this.settings.pollIntervalMs,
      },
      options,
    );
    this.consumers.add(consumer);
    consumer.start();
    return {
      close: async () => {
        await consumer.close();
        this.consumers.delete(consumer);
        // A closing bus deletes it itself, before the file closes.
        if (options.transient === true && this.transientGroups.delete(options.groupId) && !this.closing) this.log.resetGroup(options.groupId);
      },
    };
  }

  async waitForCommitted(groupId: string, position: LogPosition, timeoutMs: number): Promise<boolean> {
    this.assertOpen();
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.closing) return false;
      if (this.log.committed(groupId, position.topic, position.partition) > position.offset) return true;
      const remaining = deadline - performance.now();
      if (remaining <= 0) return false;
      // Woken by our own commits; the poll interval catches commits of other processes.
      await Signal.any([this.committed, this.closingSignal], Math.min(remaining, this.settings.pollIntervalMs));
    }
  }

  async *readAll(topic: string): AsyncIterable<ConsumedMessage> {
    this.assertOpen();
    const { partitions } = this.log.requireTopic(topic);
    for (let partition = 0; partition < partitions; partition++) yield* this.readPartition(topic, partition, 0);
  }

  async *readPartition(topic: string, partition: number, fromOffset: number, options: ReadOptions = {}): AsyncIterable<ConsumedMessage> {
    this.assertOpen();
    const { partitions, compacted } = this.log.requireTopic(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
      throw new GovernedMemoryError('MEM_VALIDATION', `topic ${topic} has no partition ${partition}`);
    }
    let from = Math.max(0, fromOffset);
    for (;;) {
      this.assertOpen();
      const page = this.log.fetch(topic, partition, from, READ_PAGE_SIZE, compacted, options.keys);
      yield* page;
      const last = page.at(-1);
      if (last === undefined || page.length < READ_PAGE_SIZE) break;
      from = last.offset + 1;
    }
  }

  async endOffsets(topic: string): Promise<number[]> {
    this.assertOpen();
    return this.log.endOffsets(topic);
  }

  async committedOffsets(groupId: string, topic: string): Promise<number[]> {
    this.assertOpen();
    return this.log.committedOffsets(groupId, topic);
  }

  async resetGroup(groupId: string): Promise<void> {
    this.assertOpen();
    // Kafka refuses to reset a group with live members; so do we, rather than race them.
    if (this.coordinator.hasMembers(groupId)) {
      throw new GovernedMemoryError('MEM_CONFLICT', `group "${groupId}" has active subscriptions; close them before resetting it`);
    }
    this.log.resetGroup(groupId);
  }

  async setCommittedOffsets(groupId: string, topic: string, offsets: readonly number[]): Promise<void> {
    this.assertOpen();
    if (this.coordinator.hasMembers(groupId)) {
      throw new GovernedMemoryError('MEM_CONFLICT', `group "${groupId}" has active subscriptions; close them before setting its offsets`);
    }
    this.log.setCommitted(groupId, topic, offsets);
    this.committed.notify();
  }

  partitionFor(topic: string, key: string): number {
    this.assertOpen();
    return partitionForKey(key, this.log.requireTopic(topic).partitions);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      // What was queued before the close still lands (its callers are waiting for the positions).
      this.flush();
      this.closing = true;
      this.closingSignal.notify();
      await Promise.all([...this.consumers].map((consumer) => consumer.close()));
      this.consumers.clear();
      for (const groupId of this.transientGroups) this.log.resetGroup(groupId);
      this.transientGroups.clear();
      this.neighbours?.close();
      this.log.close();
    })();
    return this.closed;
  }

  private assertOpen(): void {
    if (this.closing) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'the bus is closed');
  }
}

