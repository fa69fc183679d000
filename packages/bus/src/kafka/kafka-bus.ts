/**
 * The distributed bus: the port of `port.ts` on Kafka (kafkajs), with the embedded adapter's
 * semantics (both pass `testBus`).
 *
 * - Keys land where `partitionForKey` (Kafka's murmur2) says: partitions are always explicit.
 * - `produce` is atomic: a batch for one partition is one record batch of an idempotent
 *   producer; a batch spanning partitions is one transaction. Offsets of transactional
 *   batches are followed by a commit marker, so a partition's offsets increase strictly but
 *   are not dense (see kafka-reader.ts).
 * - Subscriptions are read_committed group members that commit a chunk of handled messages'
 *   offsets in one transaction with what their handlers sent (kafka-subscription.ts).
 * - `endOffsets` are last stable offsets: what a read_committed reader can reach.
 * - `topicPrefix` namespaces topics and consumer groups of a deployment on a shared cluster;
 *   the port only ever sees unprefixed names.
 */
import { validateSubscribeOptions } from '../messages.ts';
import { randomUUID } from 'node:crypto';
import { GovernedMemoryError } from '@gm/contracts';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { errorMessage, stderrLogger, type BusLogger } from '../bus-logger.ts';
import { partitionForKey } from '../partitioner.ts';
import { Signal } from '../signal.ts';
import type { Bus, CommitNotices, ConsumedMessage, LogPosition, OutgoingMessage, ReadOptions, SubscribeOptions, Subscription, TopicSpec } from '../port.ts';
import { encodeMessage, Mutex, Namespace, retryWithin, unavailable, withMetadataRetry, type EncodedMessage } from './kafka-codec.ts';
import { CommitWatch } from './kafka-commit-watch.ts';
import { Groups } from './kafka-groups.ts';
import { IdempotentProducer } from './kafka-idempotent-producer.ts';
import { readRange } from './kafka-reader.ts';
import { waitingOnKafka } from './kafka-waits.ts';
import { KafkaSubscription } from './kafka-subscription.ts';
import { Topics, isConfigurationError, type TopicReplication } from './kafka-topics.ts';
import { PartitionCountMismatchError } from '../partition-count.ts';
import { PartitionProduceGroups } from './kafka-produce-groups.ts';
import { TransactionRunner, type Routed } from './kafka-transactions.ts';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  /** Prepended to every topic and consumer group name (default none). */
  topicPrefix?: string;
  /** Receives retry, dead-letter and consumer-failure warnings; default: JSON lines on stderr. */
  logger?: BusLogger;
  /**
   * Prefix of the transactional ids. Every instance of a service must use the same one: the
   * id of a consumed partition is what fences its previous owner. Default `gm`.
   */
  transactionalIdPrefix?: string;
  /** Consumer group session timeout: how long a silent member keeps its partitions (default 10 s). */
  sessionTimeoutMs?: number;
  /**
   * How long a consumer's fetch waits for data when none is there (default 500 ms): how often an
   * idle member asks, and at most a fifth of the session timeout, since kafkajs heartbeats
   * between fetches. A lingering subscription waits its linger instead.
   */
  fetchWaitMs?: number;
  /** Replication of the topics this bus creates (default: the broker's defaults). */
  replication?: TopicReplication;
  /**
   * Where the groups of this process announce their commits and its waits listen for other
   * processes' (design §9). Without it, waitForCommitted fetches offsets every few ms. The bus
   * does not close it.
   */
  commitNotices?: CommitNotices;
}

/**
 * Batches are fetched ahead (kafka-subscription.ts), so the fetch wait no longer delays a
 * partition whose batch just ran; it only sets how often an idle member asks. At 100 ms the ten
 * consumer groups of an idle distributed stack kept a third of a 2-core machine busy
 * (docs/sizing.md).
 */
const DEFAULT_FETCH_WAIT_MS = 500;

/** How long the client waits for any one answer: half the session timeout, at least 3 s. */
const requestTimeoutOf = (sessionTimeoutMs: number): number => Math.max(3_000, Math.floor(sessionTimeoutMs / 2));

export function createKafkaBus(options: KafkaBusOptions): Bus {
  const invalid = (why: string): GovernedMemoryError => new GovernedMemoryError('MEM_VALIDATION', `createKafkaBus: ${why}`);
  if (options.brokers.length === 0 || options.brokers.some((b) => b.trim() === '')) throw invalid('brokers must be non-empty host:port strings');
  if (options.clientId.trim() === '') throw invalid('clientId must not be empty');
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 10_000;
  // 6 s is the broker's default group.min.session.timeout.ms.
  if (!Number.isInteger(sessionTimeoutMs) || sessionTimeoutMs < 6_000) throw invalid('sessionTimeoutMs must be an integer ≥ 6000');
  const fetchWaitMs = options.fetchWaitMs ?? DEFAULT_FETCH_WAIT_MS;
  if (!Number.isInteger(fetchWaitMs) || fetchWaitMs < 1 || fetchWaitMs > sessionTimeoutMs / 5) throw invalid('fetchWaitMs must be an integer from 1 to a fifth of sessionTimeoutMs');
  return new KafkaBus(options, sessionTimeoutMs, fetchWaitMs);
}

class KafkaBus implements Bus {
  private readonly kafka: Kafka;
  private readonly adminClient: Admin;
  private adminReady: Promise<Admin> | undefined;
  private readonly ns: Namespace;
  private readonly logger: BusLogger;
  private readonly topics: Topics;
  private readonly groups: Groups;
  private readonly transactions: TransactionRunner;
  private readonly commitWatch: CommitWatch;
  private readonly subscriptions = new Set<KafkaSubscription>();
  /** Open subscriptions per group: resetGroup refuses those at once, before asking Kafka. */
  private readonly members = new Map<string, number>();
  private readonly idempotent = new IdempotentProducer(
    () => this.transactions.connect(),
    // Its other requests still in flight settle first (each within the request timeout).
    (producer) => setTimeout(() => void producer.then((p) => p.disconnect()).catch(() => undefined), 2 * requestTimeoutOf(this.sessionTimeoutMs)).unref(),
  );
  /** Single-partition produces of one turn, sent as one record batch per partition. */
  private readonly singlePartition = new PartitionProduceGroups((messages) => this.sendIdempotent(messages));
  private transactional: Promise<Producer> | undefined;
  /** A transactional producer runs one transaction at a time. */
  private readonly transactionLock = new Mutex();
  private readonly closingSignal = new Signal();
  private closing = false;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly options: KafkaBusOptions,
    private readonly sessionTimeoutMs: number,
    private readonly fetchWaitMs: number,
  ) {
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      // kafkajs logs every retriable response as an error; failures reach us as exceptions.
      logLevel: logLevel.NOTHING,
      // A broker that hangs (a long GC pause, SIGSTOP, a saturated disk) keeps its socket open:
      // without a bound each request to it waits out kafkajs's 30 s default, and the bus stalls
      // after the cluster has fenced the broker and moved its leaders. Half the session timeout
      // lets a retry meet the new leader once the controller has fenced the old one
      // (docs/reliability.md). Fetches and joins extend it by their own wait.
      requestTimeout: requestTimeoutOf(sessionTimeoutMs),
      // Short first retry: the next transaction of a producer often meets the markers of the
      // previous one still being written (CONCURRENT_TRANSACTIONS) for a few milliseconds.
      retry: { initialRetryTime: 25, maxRetryTime: 3_000, retries: 10 },
    });
    this.adminClient = this.kafka.admin();
    this.ns = new Namespace(options.topicPrefix ?? '');
    this.logger = options.logger ?? stderrLogger;
    this.topics = new Topics(() => this.admin(), this.ns, options.replication);
    this.groups = new Groups(() => this.admin());
    this.transactions = new TransactionRunner(this.kafka, () => this.admin(), this.topics, this.ns, this.logger);
    this.commitWatch = new CommitWatch(this.groups, this.closingSignal, () => this.closing, options.commitNotices);
  }

  async ensureTopics(specs: TopicSpec[]): Promise<void> {
    this.assertOpen();
    try {
      await this.topics.ensure(specs);
    } catch (err) {
      // A configuration problem, not an outage: said as it is, never retried.
      if (err instanceof PartitionCountMismatchError || isConfigurationError(err)) throw err;
      throw unavailable('ensureTopics', err);
    }
  }

  async produce(messages: OutgoingMessage[]): Promise<LogPosition[]> {
    this.assertOpen();
    if (messages.length === 0) return [];
    const encoded = messages.map((m, i) => encodeMessage(m, i));
    return waitingOnKafka(() => this.produceEncoded(encoded));
  }

  private async produceEncoded(encoded: EncodedMessage[]): Promise<LogPosition[]> {
    try {
      const routed = await this.transactions.route(encoded);
      const [only, ...others] = routed.groups.keys();
      // One partition: grouped with the other such produces of this turn (kafka-produce-groups.ts).
      if (only !== undefined && others.length === 0) return await this.singlePartition.add(only, encoded);
      return await this.inTransaction((producer) => this.transactions.commit(producer, routed));
    } catch (err) {
      throw unavailable('produce', err);
    }
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    this.assertOpen();
    validateSubscribeOptions(options);
    const topics = [...new Set(options.topics)];
    for (const topic of topics) await this.topics.count(topic);
    const kafkaGroup = this.ns.group(options.groupId);
    if (options.transient === true) await this.claimTransientGroup(options.groupId);
    if (options.fromBeginning === false) await this.commitEndOffsetsIfMissing(options.groupId, topics);
    const subscription = new KafkaSubscription(
      {
        kafka: this.kafka,
        ns: this.ns,
        logger: this.logger,
        transactions: this.transactions,
        transactionalIdPrefix: this.transactionalIdPrefix(),
        sessionTimeoutMs: this.sessionTimeoutMs,
        fetchWaitMs: this.fetchWaitMs,
        committedOffset: (kafkaGroup, kafkaTopic, partition) => this.groups.committedOffset(kafkaGroup, kafkaTopic, partition),
        ensureDeadLetterTopic: (topic) => this.topics.ensureDeadLetter(topic),
        produce: async (messages) => {
          await this.sendIdempotent(messages);
        },
        ...(options.transient === true ? { afterClose: () => this.deleteTransientGroup(options.groupId, kafkaGroup) } : {}),
        ...(options.transient !== true && this.options.commitNotices !== undefined ? { notices: this.options.commitNotices } : {}),
      },
      options,
    );
    this.subscriptions.add(subscription);
    this.members.set(options.groupId, (this.members.get(options.groupId) ?? 0) + 1);
    const release = once(async () => {
      await subscription.close();
      this.subscriptions.delete(subscription);
      const left = (this.members.get(options.groupId) ?? 1) - 1;
      if (left > 0) this.members.set(options.groupId, left);
      else this.members.delete(options.groupId);
    });
    try {
      await subscription.start(topics, options.fromBeginning !== false);
    } catch (err) {
      await release();
      throw unavailable(`subscribe ${options.groupId}`, err);
    }
    return { close: release };
  }

  /**
   * A new group starting at the end: the end offsets are committed before the first member
   * joins, so messages produced from now on are never skipped. The commit is a transaction of
   * offsets only (TxnOffsetCommit needs no group membership, unlike kafkajs's setOffsets,
   * which joins the group). A group with live members already has its start positions.
   */
  private async commitEndOffsetsIfMissing(groupId: string, topics: readonly string[]): Promise<void> {
    const kafkaGroup = this.ns.group(groupId);
    if (!(await this.groups.idle(kafkaGroup))) return;
    for (const topic of topics) {
      const kafkaTopic = this.ns.topic(topic);
      const missing = new Set([...(await this.groups.committed(kafkaGroup, kafkaTopic))].filter(([, offset]) => offset < 0).map(([p]) => p));
      if (missing.size === 0) continue;
      const ends = await withMetadataRetry(async () => (await this.admin()).fetchTopicOffsets(kafkaTopic));
      const partitions = ends.filter((e) => missing.has(e.partition)).map((e) => ({ partition: e.partition, offset: Number(e.offset) }));
      await this.inTransaction((producer) => this.transactions.commit(producer, noMessages, { groupId: kafkaGroup, kafkaTopic, partitions }));
    }
  }

  async waitForCommitted(groupId: string, position: LogPosition, timeoutMs: number): Promise<boolean> {
    this.assertOpen();
    return this.commitWatch.wait(this.ns.group(groupId), this.ns.topic(position.topic), position.partition, position.offset, timeoutMs);
  }

  async *readAll(topic: string): AsyncIterable<ConsumedMessage> {
    this.assertOpen();
    const partitions = await this.topics.count(topic);
    for (let partition = 0; partition < partitions; partition++) yield* this.readPartition(topic, partition, 0);
  }

  async *readPartition(topic: string, partition: number, fromOffset: number, options: ReadOptions = {}): AsyncIterable<ConsumedMessage> {
    this.assertOpen();
    const partitions = await this.topics.count(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
      throw new GovernedMemoryError('MEM_VALIDATION', `topic ${topic} has no partition ${partition}`);
    }
    const kafkaTopic = this.ns.topic(topic);
    const admin = await this.admin();
    const offsets = (await waitingOnKafka(() => withMetadataRetry(() => admin.fetchTopicOffsets(kafkaTopic)))).find((o) => o.partition === partition);
    const end = Number(offsets?.offset ?? 0);
    // Below the log's start there is nothing left (retention deleted it): reading starts there.
    const low = Number(offsets?.low ?? 0);
    const from = Math.max(0, fromOffset, low);
    if (from >= end) return;
    for await (const message of readRange(admin, { kafkaTopic, topic, partition, from, end })) {
      if (options.keys === undefined || options.keys.has(message.key)) yield message;
    }
  }

  async endOffsets(topic: string): Promise<number[]> {
    this.assertOpen();
    await this.topics.count(topic);
    try {
      const offsets = await waitingOnKafka(() => withMetadataRetry(async () => (await this.admin()).fetchTopicOffsets(this.ns.topic(topic))));
      return offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.offset));
    } catch (err) {
      throw unavailable(`endOffsets ${topic}`, err);
    }
  }

  async committedOffsets(groupId: string, topic: string): Promise<number[]> {
    this.assertOpen();
    const partitions = await this.topics.count(topic);
    const committed = await this.groups.committed(this.ns.group(groupId), this.ns.topic(topic));
    return Array.from({ length: partitions }, (_, p) => Math.max(0, committed.get(p) ?? 0));
  }

  async resetGroup(groupId: string): Promise<void> {
    this.assertOpen();
    const conflict = new GovernedMemoryError('MEM_CONFLICT', `group "${groupId}" has active subscriptions; close them before resetting it`);
    if (this.members.has(groupId)) throw conflict;
    // Deleting the group drops its committed offsets; Kafka refuses while members are alive.
    const outcome = await this.groups.delete(this.ns.group(groupId)).catch((err: unknown) => {
      throw unavailable(`resetGroup ${groupId}`, err);
    });
    this.commitWatch.forget(this.ns.group(groupId));
    if (outcome === 'busy') throw conflict;
  }

  async setCommittedOffsets(groupId: string, topic: string, offsets: readonly number[]): Promise<void> {
    this.assertOpen();
    const partitions = await this.topics.count(topic);
    if (offsets.length !== partitions) {
      throw new GovernedMemoryError('MEM_VALIDATION', `topic ${topic} has ${partitions} partitions, ${offsets.length} offsets given`);
    }
    const kafkaGroup = this.ns.group(groupId);
    const conflict = new GovernedMemoryError('MEM_CONFLICT', `group "${groupId}" has active members; stop them before setting its offsets`);
    if (this.members.has(groupId) || !(await this.groups.idle(kafkaGroup))) throw conflict;
    // Offsets only, in a transaction (TxnOffsetCommit): no membership needed, as for commitEndOffsetsIfMissing.
    const commit = { groupId: kafkaGroup, kafkaTopic: this.ns.topic(topic), partitions: offsets.map((offset, partition) => ({ partition, offset })) };
    // The previous transaction's markers may still be in flight (CONCURRENT_TRANSACTIONS, slow on
    // a loaded cluster, beyond kafkajs's own retries): asked again for up to a session timeout.
    try {
      await retryWithin(this.sessionTimeoutMs, () => this.inTransaction((producer) => this.transactions.commit(producer, noMessages, commit)), 100);
    } catch (err) {
      throw unavailable(`setCommittedOffsets ${groupId}`, err);
    } finally {
      this.commitWatch.forget(kafkaGroup);
    }
  }

  partitionFor(topic: string, key: string): number {
    this.assertOpen();
    return partitionForKey(key, this.topics.known(topic));
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      this.closingSignal.notify();
      this.commitWatch.close();
      await Promise.all([...this.subscriptions].map((s) => s.close()));
      this.subscriptions.clear();
      await this.transactionLock.idle();
      // What was produced before the close still goes out (its callers wait for the positions).
      await this.singlePartition.idle();
      const producers = [this.idempotent.connected, this.transactional].filter((p) => p !== undefined);
      await Promise.all(producers.map((p) => p.then((producer) => producer.disconnect()).catch(() => undefined)));
      if (this.adminReady !== undefined) await this.adminClient.disconnect().catch(() => undefined);
    })();
    return this.closed;
  }

  /** Appends through the idempotent producer, which is replaced after any failure (kafka-idempotent-producer.ts). */
  private async sendIdempotent(messages: readonly EncodedMessage[]): Promise<LogPosition[]> {
    const routed = await this.transactions.route(messages);
    return this.idempotent.send((producer) => this.transactions.send(producer, routed));
  }

  /**
   * A transient group starts empty: what a crashed predecessor of the same name committed is
   * deleted. Kafka refuses while members are alive, and a crashed member stays one until its
   * session times out, so a busy group is retried for two session timeouts before it counts as
   * another live holder of the name (MEM_CONFLICT).
   */
  private async claimTransientGroup(groupId: string): Promise<void> {
    const conflict = new GovernedMemoryError('MEM_CONFLICT', `transient group "${groupId}" already has a subscription`);
    if (this.members.has(groupId)) throw conflict;
    const deadline = performance.now() + 2 * this.sessionTimeoutMs;
    for (;;) {
      const outcome = await this.groups.delete(this.ns.group(groupId)).catch((err: unknown) => {
        throw unavailable(`subscribe ${groupId}`, err);
      });
      this.commitWatch.forget(this.ns.group(groupId));
      if (outcome === 'done') return;
      if (performance.now() > deadline) throw conflict;
      if (this.closing) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'the bus is closed');
      await Signal.any([this.closingSignal], Math.max(100, Math.floor(this.sessionTimeoutMs / 4)));
    }
  }

  /** Deletes a transient group once its member left; what fails is logged (docs/operations.md says how to clean up). */
  private async deleteTransientGroup(groupId: string, kafkaGroup: string): Promise<void> {
    const outcome = await this.groups.delete(kafkaGroup).catch((err: unknown) => errorMessage(err));
    this.commitWatch.forget(kafkaGroup);
    if (outcome !== 'done') this.logger.warn({ groupId, err: outcome === 'busy' ? 'the group still has members' : outcome }, 'bus transient group not deleted');
  }

  /** Runs `work` with the bus's transactional producer, one transaction at a time. */
  private inTransaction<T>(work: (producer: Producer) => Promise<T>): Promise<T> {
    return this.transactionLock.run(async () => {
      this.transactional ??= this.transactions.connect(`${this.transactionalIdPrefix()}.produce.${randomUUID()}`);
      try {
        return await work(await this.transactional);
      } catch (err) {
        // A producer whose transaction failed half-way is not reused.
        const broken = this.transactional;
        this.transactional = undefined;
        void broken.then((p) => p.disconnect()).catch(() => undefined);
        throw err;
      }
    });
  }

  private admin(): Promise<Admin> {
    if (this.adminReady === undefined) {
      const ready = this.adminClient.connect().then(() => this.adminClient);
      this.adminReady = ready;
      // A failed connect is retried by the next call rather than cached.
      ready.catch(() => {
        if (this.adminReady === ready) this.adminReady = undefined;
      });
    }
    return this.adminReady;
  }

  private transactionalIdPrefix(): string {
    return this.options.transactionalIdPrefix ?? 'gm';
  }

  private assertOpen(): void {
    if (this.closing) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'the bus is closed');
  }
}


const noMessages: Routed = { topicMessages: [], slots: [], groups: new Map() };

const once = (fn: () => Promise<void>): (() => Promise<void>) => {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
};

