/**
 * One subscription: a kafkajs group member (read_committed, no auto-commit) that hands each
 * message to the handler and then commits its offset — in a Kafka transaction with the
 * handler's sends (sendOffsets), or with a plain group commit when it sent nothing.
 *
 * Exactly-once across owners. kafkajs speaks TxnOffsetCommit v0–1, which carries no group
 * generation, so a member that lost its partition (a stalled process the group evicted) could
 * still commit a transaction. Fencing is therefore by transactional id, one per input
 * partition (`<prefix>.<group>.<topic>.<partition>`, the same on every instance): before a
 * member handles anything of a partition it was (re)assigned, it initialises that id — which
 * aborts or waits out the previous owner's open transaction and fences it — and then re-reads
 * the group's committed offset, skipping whatever the previous owner committed meanwhile.
 *
 * Offsets committed after the last message of a fetched batch point past any trailing
 * transaction markers (`batch.lastOffset() + 1`), and a batch of markers only commits their
 * end too, so a caught-up group's committed offsets equal the end offsets.
 */
import { deadLetterOf } from '../messages.ts';
import { isDependencyOutage, isGovernedMemoryError, retryDelayMs } from '@gm/contracts';
import type { Batch, Consumer, EachBatchPayload, Kafka, Producer } from 'kafkajs';
import type { BusLogger } from '../embedded/group-consumer.ts';
import { Signal } from '../embedded/signal.ts';
import type { ConsumedMessage, MessageHandler, ProcessContext, Subscription, SubscribeOptions } from '../port.ts';
import { decodeMessage, encodeMessage, errorMessage, isFenced, Mutex, type EncodedMessage, type Namespace } from './kafka-codec.ts';
import type { TransactionRunner } from './kafka-transactions.ts';

export interface SubscriptionDeps {
  kafka: Kafka;
  ns: Namespace;
  logger: BusLogger;
  transactions: TransactionRunner;
  transactionalIdPrefix: string;
  sessionTimeoutMs: number;
  /** The group's committed offset of one partition (0 when none). */
  committedOffset(groupId: string, topic: string, partition: number): Promise<number>;
  /** Makes sure `<topic>.dlq` exists (a consumer of an undeclared topic may dead-letter). */
  ensureDeadLetterTopic(topic: string): Promise<void>;
}

type Outcome = 'committed' | 'stopped' | 'lost';

/** kafkajs restarts a consumer whose join failed retriably; a join this late is an outage. */
const JOIN_TIMEOUT_MS = 60_000;

export class KafkaSubscription implements Subscription {
  readonly groupId: string;
  private readonly consumer: Consumer;
  private readonly handler: MessageHandler;
  private readonly maxAttempts: number;
  private readonly retryBackoffMs: number;
  /** Per partition: its transactional producer, and the work that must not interleave. */
  private readonly producers = new Map<string, Promise<Producer>>();
  private readonly locks = new Map<string, Mutex>();
  /** Committed offset re-read after fencing, per partition owned since the last assignment. */
  private readonly floors = new Map<string, number>();
  private readonly stopping = new Signal();
  private closing = false;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly deps: SubscriptionDeps,
    options: SubscribeOptions,
  ) {
    this.groupId = options.groupId;
    this.handler = options.handler;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.retryBackoffMs = options.retryBackoffMs ?? 50;
    this.consumer = deps.kafka.consumer({
      groupId: deps.ns.group(options.groupId),
      readUncommitted: false,
      allowAutoTopicCreation: false,
      sessionTimeout: deps.sessionTimeoutMs,
      // Frequent heartbeats make a joining or leaving member rebalance the group quickly.
      heartbeatInterval: Math.min(500, Math.floor(deps.sessionTimeoutMs / 3)),
      maxWaitTimeInMs: 250,
    });
  }

  /**
   * Resolves once this member joined the group and got its partitions. kafkajs's run() also
   * returns when the first join failed with a retriable error (a coordinator still loading on
   * a fresh broker) and it will restart the consumer itself, so the join is awaited as an event.
   */
  async start(topics: readonly string[], fromBeginning: boolean): Promise<void> {
    const { consumer } = this;
    let joined: () => void = () => undefined;
    let failed: (err: unknown) => void = () => undefined;
    const joining = new Promise<void>((resolve, reject) => {
      joined = resolve;
      failed = reject;
    });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      this.onAssignment();
      joined();
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0 && !this.closing) this.commitSkipped(payload.topic, payload.partition, Number(payload.lastOffset) + 1);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) failed(payload.error);
      this.deps.logger.warn({ groupId: this.groupId, err: errorMessage(payload.error), restart: payload.restart }, 'bus consumer crashed');
    });
    await consumer.connect();
    await consumer.subscribe({ topics: topics.map((t) => this.deps.ns.topic(t)), fromBeginning });
    await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: (payload) => this.onBatch(payload) });
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no group join within ${JOIN_TIMEOUT_MS} ms`)), JOIN_TIMEOUT_MS);
    });
    try {
      await Promise.race([joining, gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops taking messages, lets the in-flight one finish and commit, then leaves the group. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      this.stopping.notify();
      await Promise.all([...this.locks.values()].map((lock) => lock.idle()));
      await this.consumer.disconnect().catch((err: unknown) => this.deps.logger.warn({ groupId: this.groupId, err: errorMessage(err) }, 'bus consumer disconnect failed'));
      await Promise.all([...this.producers.keys()].map((key) => this.dropProducer(key)));
    })();
    return this.closed;
  }

  private lock(key: string): Mutex {
    let lock = this.locks.get(key);
    if (lock === undefined) this.locks.set(key, (lock = new Mutex()));
    return lock;
  }

  /** A new generation: partitions may have been elsewhere meanwhile, so every one is re-fenced. */
  private onAssignment(): void {
    for (const key of new Set([...this.producers.keys(), ...this.floors.keys()])) {
      void this.lock(key).run(async () => {
        this.floors.delete(key);
        await this.dropProducer(key);
      });
    }
  }

  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale, pause }: EachBatchPayload): Promise<void> {
    if (this.closing) return;
    const key = `${batch.topic}\u0000${batch.partition}`;
    const outcome = await this.lock(key).run(async () => {
      if (this.closing) return 'stopped';
      const floor = await this.ownPartition(key, batch.topic, batch.partition);
      return this.processBatch(batch, floor, { resolveOffset, heartbeat, isRunning, isStale });
    });
    if (outcome === 'lost') {
      // Another member owns it now; the rebalance that tells us so will follow. Until then,
      // fetching it again would only re-run handlers whose results could not be committed.
      const resume = pause();
      setTimeout(resume, this.deps.sessionTimeoutMs).unref();
    }
  }

  private async processBatch(
    batch: Batch,
    floor: number,
    payload: Pick<EachBatchPayload, 'resolveOffset' | 'heartbeat' | 'isRunning' | 'isStale'>,
  ): Promise<Outcome> {
    const last = batch.messages.at(-1);
    const topic = this.deps.ns.portTopic(batch.topic);
    for (const record of batch.messages) {
      if (this.closing || !payload.isRunning() || payload.isStale()) return 'stopped';
      // Past the last message: its trailing transaction markers belong to it.
      const next = record === last ? Number(batch.lastOffset()) + 1 : Number(record.offset) + 1;
      if (Number(record.offset) < floor) {
        // The previous owner handled and committed it after our fetch position was chosen.
        if (record === last && next > floor) await this.commitOffsetOnly(batch.topic, batch.partition, next);
        payload.resolveOffset(record.offset);
        continue;
      }
      const outcome = await this.process(decodeMessage(topic, batch.partition, record), next, payload.heartbeat);
      if (outcome !== 'committed') return outcome;
      payload.resolveOffset(record.offset);
      await payload.heartbeat();
    }
    return 'committed';
  }

  private async process(message: ConsumedMessage, next: number, heartbeat: () => Promise<void>): Promise<Outcome> {
    for (let attempt = 1; ; attempt++) {
      const queued: EncodedMessage[] = [];
      let open = true;
      const ctx: ProcessContext = {
        send: (messages) => {
          if (!open) throw new Error('ctx.send was called after the handler settled; its messages would be lost');
          // Encoded now: the handler sees a bad value at once, and later mutation cannot leak in.
          queued.push(...messages.map(encodeMessage));
        },
      };
      let failure: unknown;
      let failed = false;
      try {
        await this.handler(message, ctx);
      } catch (err) {
        failed = true;
        failure = err;
      } finally {
        open = false;
      }
      if (!failed) {
        try {
          return await this.commit(message, queued, next);
        } catch (err) {
          if (isFenced(err)) return this.lost(message);
          // Broker trouble is not the message's fault: kafkajs refetches from the last commit.
          if (!isValidationError(err)) throw err;
          // The handler sent to a topic that does not exist: as deterministic as a throw.
          failure = err;
        }
      }
      // An outage of a dependency is not the message's fault: retry it for as long as it lasts.
      if (attempt >= this.maxAttempts && !isDependencyOutage(failure)) {
        try {
          return await this.deadLetter(message, failure, attempt, next);
        } catch (err) {
          if (isFenced(err)) return this.lost(message);
          throw err;
        }
      }
      this.deps.logger.warn(
        { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempt, err: errorMessage(failure) },
        'bus handler failed; retrying',
      );
      // Closing during back-off leaves the message uncommitted; the next owner retries it.
      if (!this.closing) await Signal.any([this.stopping], retryDelayMs(this.retryBackoffMs, attempt));
      if (this.closing) return 'stopped';
      await heartbeat();
    }
  }

  private async commit(message: ConsumedMessage, queued: EncodedMessage[], next: number): Promise<Outcome> {
    const kafkaTopic = this.deps.ns.topic(message.topic);
    if (queued.length === 0) {
      await this.commitOffsetOnly(kafkaTopic, message.partition, next);
      return 'committed';
    }
    const routed = await this.deps.transactions.route(queued);
    const producer = await this.producer(`${kafkaTopic}\u0000${message.partition}`, kafkaTopic, message.partition);
    await this.deps.transactions.commit(producer, routed, {
      groupId: this.deps.ns.group(this.groupId),
      kafkaTopic,
      partitions: [{ partition: message.partition, offset: next }],
    });
    return 'committed';
  }

  private async deadLetter(message: ConsumedMessage, err: unknown, attempts: number, next: number): Promise<Outcome> {
    const error = errorMessage(err);
    await this.deps.ensureDeadLetterTopic(message.topic);
    const dlqMessage = encodeMessage(deadLetterOf(message, this.groupId, error, attempts));
    const outcome = await this.commit(message, [dlqMessage], next);
    this.deps.logger.warn(
      { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempts, err: error },
      'bus message dead-lettered',
    );
    return outcome;
  }

  private lost(message: ConsumedMessage): Outcome {
    const key = `${this.deps.ns.topic(message.topic)}\u0000${message.partition}`;
    this.deps.logger.warn({ groupId: this.groupId, topic: message.topic, partition: message.partition }, 'bus partition taken over by another member; its result was not committed');
    this.floors.delete(key);
    void this.dropProducer(key);
    return 'lost';
  }

  /**
   * Fences every earlier owner of the partition, then reads where the group really is. Runs
   * before the first message of each (re)assigned partition.
   */
  private async ownPartition(key: string, kafkaTopic: string, partition: number): Promise<number> {
    const known = this.floors.get(key);
    if (known !== undefined) return known;
    const producer = await this.producer(key, kafkaTopic, partition);
    await this.deps.transactions.fence(producer);
    const floor = await this.deps.committedOffset(this.deps.ns.group(this.groupId), kafkaTopic, partition);
    this.floors.set(key, floor);
    return floor;
  }

  private producer(key: string, kafkaTopic: string, partition: number): Promise<Producer> {
    let producer = this.producers.get(key);
    if (producer === undefined) {
      const transactionalId = `${this.deps.transactionalIdPrefix}.${this.deps.ns.group(this.groupId)}.${kafkaTopic}.${partition}`;
      producer = this.deps.transactions.connect(transactionalId);
      this.producers.set(key, producer);
      // A failed connect is not cached: the next message tries again.
      producer.catch(() => this.producers.delete(key));
    }
    return producer;
  }

  private async dropProducer(key: string): Promise<void> {
    const producer = this.producers.get(key);
    this.producers.delete(key);
    if (producer !== undefined) await producer.then((p) => p.disconnect()).catch(() => undefined);
  }

  /** A plain group commit: generation-fenced by the coordinator, so no producer is needed. */
  private async commitOffsetOnly(kafkaTopic: string, partition: number, offset: number): Promise<void> {
    await this.consumer.commitOffsets([{ topic: kafkaTopic, partition, offset: String(offset) }]);
  }

  /** A fetched batch of only markers or aborted records: commit past it, in turn. */
  private commitSkipped(kafkaTopic: string, partition: number, next: number): void {
    const key = `${kafkaTopic}\u0000${partition}`;
    void this.lock(key)
      .run(async () => {
        if (this.closing) return;
        const floor = await this.ownPartition(key, kafkaTopic, partition);
        if (next > floor) {
          await this.commitOffsetOnly(kafkaTopic, partition, next);
          this.floors.set(key, next);
        }
      })
      .catch((err: unknown) => this.deps.logger.warn({ groupId: this.groupId, topic: kafkaTopic, partition, err: errorMessage(err) }, 'bus commit past transaction markers failed'));
  }
}

const isValidationError = (err: unknown): boolean => isGovernedMemoryError(err) && err.code === 'MEM_VALIDATION';
