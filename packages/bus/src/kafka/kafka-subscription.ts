/**
 * One subscription: a kafkajs group member (read_committed, no auto-commit) that hands each
 * message of a fetched batch to the handler in order and commits the results a chunk of
 * messages at a time (kafka-chunks.ts) — the handlers' sends and the offset past the chunk's
 * last message in one Kafka transaction (sendOffsets), or a plain group commit when the chunk
 * sent nothing. A handler that fails first gets what was handled before it committed, then is
 * retried and dead-lettered on its own.
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
 *
 * Partitions flow independently. kafkajs's fetcher waits until every batch of a fetch response
 * has been handled before it fetches again, so the slowest partition (a transaction, an index
 * refresh) paced all the others. Here a batch is handled in the background, in its partition's
 * lock, and the fetcher moves on at once.
 *
 * Fetched ahead. A fetched batch's end is resolved at once, so the next fetch asks for the
 * partition from past it while the batch is still handled: a message arriving meanwhile comes
 * back with the next fetch, not after a long poll that left the partition out (a partition
 * paused while its batch ran waited up to the whole fetch wait after it resumed, at every hop
 * of a write). A partition pauses only while several fetched batches wait (kafka-partition-flow.ts).
 * Batches run in fetch order, and each must start at or before the partition's floor — the
 * committed offset, re-read after fencing and advanced by every commit. One that starts past it
 * was fetched ahead of a batch that did not commit (it failed, stopped early, was taken over, or
 * was fetched before a rebalance): it is dropped and the partition fetched again from the floor.
 * Whatever a batch handed over again repeats below the floor is skipped.
 */
import { DEFAULT_BATCH_MESSAGES, deadLetterOf } from '../messages.ts';
import { GovernedMemoryError, isGovernedMemoryError } from '@gm/contracts';
import type { Batch, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { errorMessage, type BusLogger } from '../bus-logger.ts';
import { Signal } from '../signal.ts';
import { HandlerAttempt, type AttemptSettings } from '../handler-attempt.ts';
import type { BatchHandler, CommitNotices, ConsumedMessage, LogPosition, MessageHandler, Subscription, SubscribeOptions } from '../port.ts';
import { RetryPolicy } from '../retry-policy.ts';
import { ChunkCommitter, type Chunk, type ChunkEntry, type ChunkLimits } from './kafka-chunks.ts';
import { PartitionFlow } from './kafka-partition-flow.ts';
import { decodeMessage, encodeMessage, recordRefusal, type EncodedMessage, type Namespace } from './kafka-codec.ts';
import { PartitionOwnership, partitionKey } from './kafka-partition-ownership.ts';
import { StallWatch } from './kafka-stall-watch.ts';
import { LazyCommits } from './kafka-lazy-commits.ts';
import { handlingBatch } from './kafka-waits.ts';
import type { TransactionRunner } from './kafka-transactions.ts';

export interface SubscriptionDeps {
  kafka: Kafka;
  ns: Namespace;
  logger: BusLogger;
  transactions: TransactionRunner;
  transactionalIdPrefix: string;
  sessionTimeoutMs: number;
  /** How long a fetch waits for data when none is there (KafkaBusOptions.fetchWaitMs). */
  fetchWaitMs: number;
  /** The group's committed offset of one partition (0 when none). */
  committedOffset(groupId: string, topic: string, partition: number): Promise<number>;
  /** Makes sure `<topic>.dlq` exists (a consumer of an undeclared topic may dead-letter). */
  ensureDeadLetterTopic(topic: string): Promise<void>;
  /** Appends without a transaction (a `sends: false` group's dead letters), through the bus's idempotent producer. */
  produce(messages: readonly EncodedMessage[]): Promise<void>;
  /** Runs once the member left the group on close (a transient group deletes itself). */
  afterClose?: () => Promise<void>;
  /** Announces the group's commits to other processes (not a transient group's: nobody waits on those). */
  notices?: Pick<CommitNotices, 'announce'>;
}

type Outcome = 'committed' | 'stopped' | 'lost';

type BatchPayload = Pick<EachBatchPayload, 'heartbeat' | 'isRunning' | 'isStale'>;

/** A fetched message of a batch subscription, with where its commit points. */
interface BatchItem {
  message: ConsumedMessage;
  /** The offset to commit after it (past trailing transaction markers for the batch's last). */
  next: number;
}

/** kafkajs restarts a consumer whose join failed retriably; a join this late is an outage. */
const JOIN_TIMEOUT_MS = 60_000;

/**
 * Bounds of one transaction's chunk of messages: big enough to share a transaction's round
 * trips across a fetched batch, small enough that its record batches stay far below the
 * broker's 1 MiB message.max.bytes and a result waits at most a few dozen ms for its commit.
 */
const CHUNK_LIMITS: ChunkLimits = { maxMessages: 256, maxBytes: 512 * 1024, maxAgeMs: 25 };

/**
 * How often a dead letter the broker refuses is sent again before its message is skipped (an
 * ALERT, onDeadLetterDropped). A refusal of the records themselves repeats; retrying it forever
 * held every later message of the partition, whatever tenant sent it.
 */
const DEAD_LETTER_TRIES = 3;

/** Thrown out of a message's own commit when another member fenced this one: the partition is lost. */
class PartitionLost extends Error {}

/**
 * Partitions whose batches run at the same time (kafkajs runs one at a time by default, so a
 * member owning several partitions handled them in turn). Each partition keeps its own lock
 * and transactional producer, so they never share a transaction.
 */
const PARTITIONS_IN_PARALLEL = 8;

/** Fetched batches of one partition waiting or running, at which the partition pauses until one settles. */
const BATCHES_AHEAD = 3;

/**
 * A crashed consumer (its coordinator loading or moving, a broker gone) restarts after this
 * pause, doubled per crash in a row up to the cap, until it joins again. kafkajs restarts after
 * the failed retry's own wait — tens of milliseconds with our retry settings — and during a
 * failover every member of every group crashed and rejoined about 20 times a second, loading
 * the new coordinator while it was loading (docs/reliability.md "The Kafka client under failover").
 */
const RESTART_PAUSE_MS = { first: 250, max: 2_000 };

export class KafkaSubscription implements Subscription {
  readonly groupId: string;
  private readonly consumer: Consumer;
  private readonly handler: MessageHandler;
  /** Set for a batch subscription: consecutive messages of a fetched batch go to it together. */
  private readonly batchHandler: BatchHandler | undefined;
  private readonly retries: RetryPolicy;
  /** Messages per batch handler call (maxBatchMessages); the chunk limits still bound each transaction. */
  private readonly batchMessages: number;
  /**
   * False for `sends: false`: no transactional producer, no fencing by transactional id (a plain
   * group commit is fenced by the coordinator's generation), dead letters appended before the commit.
   */
  private readonly sends: boolean;
  private readonly attemptSettings: AttemptSettings<EncodedMessage>;
  /** Per partition: its lock, its transactional producer and its floor (kafka-partition-ownership.ts). */
  private readonly owned: PartitionOwnership;
  private readonly stopping = new Signal();
  /** Crashes since the last join: the next restart's pause doubles with each. */
  private crashesInARow = 0;
  /** Each partition's batch in the background, watched for stalls (kafka-stall-watch.ts). */
  private readonly stalls: StallWatch;
  private watchdog: NodeJS.Timeout | undefined;
  /** Which partitions are paused: at the bound of batches fetched ahead, or held after a failure. */
  private readonly flow = new PartitionFlow(BATCHES_AHEAD);
  /** Quiet chunks' commits held back (lazyCommitMs; kafka-lazy-commits.ts). */
  private readonly lazy: LazyCommits;
  /** Set while the member left the group because a handler stalled (checkStalled). */
  private leaving: Promise<void> | undefined;
  private closing = false;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly deps: SubscriptionDeps,
    options: SubscribeOptions,
  ) {
    this.groupId = options.groupId;
    const { handler, batchHandler } = options;
    this.batchHandler = batchHandler;
    // A batch handler handles a single message (a retry, a split down to one) as a batch of one.
    if (handler !== undefined) this.handler = handler;
    else if (batchHandler !== undefined) this.handler = (message, ctx) => batchHandler([message], ctx);
    else throw new Error('subscribe: a handler or a batchHandler is required');
    this.retries = new RetryPolicy(options, { logger: deps.logger, stopping: this.stopping, closing: () => this.closing });
    this.batchMessages = options.maxBatchMessages ?? DEFAULT_BATCH_MESSAGES;
    this.sends = options.sends !== false;
    this.stalls = new StallWatch(deps.sessionTimeoutMs);
    this.lazy = new LazyCommits(options.lazyCommitMs ?? 0, {
      groupId: options.groupId, logger: deps.logger,
      lock: (key) => this.owned.lock(key),
      commit: (kafkaTopic, partition, next) => this.commitOffsetOnly(kafkaTopic, partition, next),
    });
    this.attemptSettings = { encode: encodeMessage, logger: deps.logger, sends: this.sends, groupId: options.groupId };
    this.owned = new PartitionOwnership({
      kafkaGroup: deps.ns.group(options.groupId), transactionalIdPrefix: deps.transactionalIdPrefix, sends: this.sends,
      transactions: deps.transactions, committedOffset: deps.committedOffset,
      ...(deps.notices !== undefined ? { onCommitted: announcing(deps.notices, deps.ns.group(options.groupId)) } : {}),
    });
    const alone = options.transient === true;
    this.consumer = deps.kafka.consumer({
      groupId: deps.ns.group(options.groupId),
      readUncommitted: false,
      allowAutoTopicCreation: false,
      sessionTimeout: deps.sessionTimeoutMs,
      // Frequent heartbeats make a joining or leaving member rebalance the group quickly. A
      // transient group has this member alone, so nothing rebalances it: it heartbeats and asks
      // as seldom as its session allows (a fetch still answers as soon as a message is there),
      // which is most of what the key stores' and the API's reply followers cost at rest.
      heartbeatInterval: alone ? Math.floor(deps.sessionTimeoutMs / 3) : Math.min(500, Math.floor(deps.sessionTimeoutMs / 3)),
      // A lingering group waits its linger instead.
      maxWaitTimeInMs: options.lingerMs !== undefined && options.lingerMs > 0 ? Math.ceil(options.lingerMs) : alone ? Math.floor(deps.sessionTimeoutMs / 5) : deps.fetchWaitMs,
      // Lingering: the broker answers a fetch once 1 MiB is there or lingerMs passed, so batches grow under load.
      ...(options.lingerMs !== undefined && options.lingerMs > 0 ? { minBytes: 1024 * 1024 } : {}),
      retry: { restartOnFailure: () => this.pauseBeforeRestart() },
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
      this.crashesInARow = 0;
      this.owned.releaseAll();
      this.lazy.drop();
      joined();
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0 && payload.firstOffset !== null && !this.closing) {
        this.commitSkipped(payload.topic, payload.partition, Number(payload.firstOffset), Number(payload.lastOffset) + 1);
      }
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) failed(payload.error);
      this.deps.logger.warn({ groupId: this.groupId, err: errorMessage(payload.error), restart: payload.restart }, 'bus consumer crashed');
    });
    await consumer.connect();
    await consumer.subscribe({ topics: topics.map((t) => this.deps.ns.topic(t)), fromBeginning });
    await this.run();
    this.watchdog = setInterval(() => this.checkStalled(), Math.max(100, Math.floor(this.deps.sessionTimeoutMs / 4)));
    this.watchdog.unref();
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

  /** kafkajs asks before it restarts a crashed consumer: yes, after a pause that grows with the crashes in a row (or at once when closing). */
  private async pauseBeforeRestart(): Promise<boolean> {
    const pauseMs = Math.min(RESTART_PAUSE_MS.max, RESTART_PAUSE_MS.first * 2 ** this.crashesInARow);
    this.crashesInARow += 1;
    if (!this.closing) await Signal.any([this.stopping], pauseMs);
    return true;
  }

  private run(): Promise<void> {
    return this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: PARTITIONS_IN_PARALLEL,
      eachBatch: (payload) => this.onBatch(payload),
    });
  }

  /**
   * A handler stuck past the session timeout (no progress: no message handled, no retry).
   * Batches run in the background, so kafkajs keeps heartbeating and the group would never
   * evict this member: it leaves by itself instead, so the others take its partitions over (and
   * fence its late results), and rejoins once every batch it holds has settled — what a stalled
   * member used to get from the session timeout.
   */
  private checkStalled(): void {
    if (this.closing || this.leaving !== undefined) return;
    const stalled = this.stalls.stalled().map((key) => {
      const [kafkaTopic = '', partition] = key.split('\u0000');
      return `${this.deps.ns.portTopic(kafkaTopic)}[${partition}]`;
    });
    if (stalled.length === 0) return;
    this.deps.logger.warn({ groupId: this.groupId, sessionTimeoutMs: this.deps.sessionTimeoutMs, stalled }, 'bus handler stalled past the session timeout; leaving the group until it settles');
    this.leaving = (async () => {
      try {
        await this.consumer.stop();
        await this.owned.idle();
        if (!this.closing) await this.run();
      } catch (err) {
        this.deps.logger.warn({ groupId: this.groupId, err: errorMessage(err) }, 'bus consumer could not rejoin after a stall');
      } finally {
        this.leaving = undefined;
      }
    })();
  }

  /** Stops taking messages, lets the in-flight one finish and commit, then leaves the group. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      clearInterval(this.watchdog);
      this.flow.close();
      this.stopping.notify();
      await this.leaving;
      await this.owned.idle();
      await this.lazy.flush();
      await this.consumer.disconnect().catch((err: unknown) => this.deps.logger.warn({ groupId: this.groupId, err: errorMessage(err) }, 'bus consumer disconnect failed'));
      await this.owned.close();
      await this.deps.afterClose?.();
    })();
    return this.closed;
  }

  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale, pause }: EachBatchPayload): Promise<void> {
    if (this.closing) return;
    const key = partitionKey(batch.topic, batch.partition);
    const fetchedFrom = Number(batch.fetchedOffset);
    // Fetched ahead: the next fetch asks for the partition from past this batch (see the top).
    resolveOffset(batch.lastOffset());
    this.flow.add(key, pause);
    void this.owned.lock(key)
      .run(async (): Promise<Outcome> => {
        if (this.closing) return 'stopped';
        this.stalls.progressed(key);
        // Progress is what the handling loop reports between messages and retries (a dependency
        // outage retried for minutes is not a stall); a handler that never returns reports none.
        const progressing = async () => {
          this.stalls.progressed(key);
          await heartbeat();
        };
        try {
          const floor = await this.stalls.onKafka(key, () => this.owned.own(key, batch.topic, batch.partition));
          if (fetchedFrom > floor) {
            // Messages between the floor and this batch were fetched and not committed: fetch
            // them again (unless a refetch is already asked for, which this batch predates).
            if (!isStale()) this.seek(batch.topic, batch.partition, floor);
            return 'stopped';
          }
          // The handler's own calls into the bus wait on Kafka too (kafka-waits.ts).
          return await handlingBatch((step) => this.stalls.onKafka(key, step), () => this.processBatch(batch, floor, { heartbeat: progressing, isRunning, isStale }));
        } finally {
          this.stalls.settled(key);
        }
      })
      .then(
        (outcome) => {
          this.flow.settle(key);
          // Lost: another member owns it now, and the rebalance that tells us so will follow.
          // Until then, fetching it again would only re-run handlers whose results could not be committed.
          if (outcome === 'lost') this.refetch(key, batch, fetchedFrom, pause, this.deps.sessionTimeoutMs);
        },
        (err: unknown) => {
          this.flow.settle(key);
          // Broker trouble (a commit failed): nothing past the last commit counts. The partition
          // is owned again from scratch — fenced, its committed offset re-read — and refetched
          // from where this batch was fetched after a pause.
          this.deps.logger.warn({ groupId: this.groupId, topic: this.deps.ns.portTopic(batch.topic), partition: batch.partition, err: errorMessage(err) }, 'bus batch failed; refetching from the last commit');
          void this.owned.lock(key).run(() => this.owned.release(key));
          this.refetch(key, batch, fetchedFrom, pause, this.retries.retryBackoffMs);
        },
      );
  }

  /**
   * Fetches the partition again from where `batch` was fetched — at or before its committed
   * offset, so what repeats is skipped by the floor — once `afterMs` passed. The batches fetched
   * after it start past the floor and are dropped.
   */
  private refetch(key: string, batch: Batch, fetchedFrom: number, pause: () => () => void, afterMs: number): void {
    if (this.closing) return;
    this.seek(batch.topic, batch.partition, fetchedFrom);
    this.flow.hold(key, pause, afterMs);
  }

  /**
   * Fetches a partition next from `offset`. Not while the member is out of the group (it left
   * after a stall, or is closing): kafkajs then refuses a seek with an error thrown at once, and
   * joining again fetches every partition from its committed offset anyway. The bench's ingest
   * load crashed the vector-indexer so: a batch failed while the member had left.
   */
  private seek(kafkaTopic: string, partition: number, offset: number): void {
    if (this.closing || this.leaving !== undefined) return;
    try {
      this.consumer.seek({ topic: kafkaTopic, partition, offset: String(offset) });
    } catch (err) {
      this.deps.logger.warn({ groupId: this.groupId, topic: this.deps.ns.portTopic(kafkaTopic), partition, err: errorMessage(err) }, 'bus could not seek; the partition is fetched from its committed offset once the member joins again');
    }
  }

  private async processBatch(
    batch: Batch,
    floor: number,
    payload: BatchPayload,
  ): Promise<Outcome> {
    const key = partitionKey(batch.topic, batch.partition);
    const chunks = new ChunkCommitter(
      CHUNK_LIMITS,
      (chunk) => this.stalls.onKafka(key, () => this.commitChunk(batch.topic, batch.partition, chunk)),
      (chunk) => {
        const lastEntry = chunk.entries.at(-1);
        if (lastEntry === undefined) return;
        // Committed: a batch handed over again skips up to here.
        this.owned.committed(batch.topic, batch.partition, lastEntry.next);
      },
    );
    let stopped: boolean;
    try {
      stopped = await this.handleBatch(batch, floor, payload, chunks);
    } catch (err) {
      // What was handled before the error (a heartbeat that learnt of a rebalance, a broker
      // outage) is still sound: commit it before kafkajs rejoins or refetches.
      const drained = await chunks.drain();
      if (err instanceof PartitionLost || drained?.lost === true) return this.lost(batch.topic, batch.partition);
      throw err;
    }
    const failure = await chunks.drain();
    if (failure === undefined) return stopped ? 'stopped' : 'committed';
    if (failure.lost) return this.lost(batch.topic, batch.partition);
    // Broker trouble is not the messages' fault: kafkajs refetches from the last commit. But
    // records the broker refused (too large, malformed) would be refused on every refetch.
    if (recordRefusal(failure.error) === undefined) throw failure.error;
    try {
      return await this.handleAlone(batch, payload);
    } catch (err) {
      if (err instanceof PartitionLost) return this.lost(batch.topic, batch.partition);
      throw err;
    }
  }

  /**
   * After the broker refused a chunk's records: which message's results they were is unknown (a
   * chunk holds many), so the batch's messages past the last commit are handled again one at a
   * time, each committed alone. The one whose results are refused takes the retry path, as a
   * handler that threw (then its bounded dead letter); the others go on.
   */
  private async handleAlone(batch: Batch, payload: BatchPayload): Promise<Outcome> {
    const key = partitionKey(batch.topic, batch.partition);
    await this.owned.release(key);
    const floor = await this.stalls.onKafka(key, () => this.owned.own(key, batch.topic, batch.partition));
    for (const item of await this.itemsPastFloor(batch, floor)) {
      if (this.closing || !payload.isRunning() || payload.isStale()) return 'stopped';
      const run = await this.attempt(item.message);
      let failure: unknown = run.failure;
      if (run.failed) {
        run.discarded();
      } else {
        failure = await this.commitAlone(batch.topic, batch.partition, { queued: run.queued, attempt: run, next: item.next });
        if (failure === undefined) continue;
      }
      if ((await this.retry(item.message, failure, { next: item.next }, payload.heartbeat)) === 'stopped') return 'stopped';
    }
    return 'committed';
  }

  /**
   * Commits one message's results on their own. Undefined when they committed; the refusal (as
   * the message's failure) when the broker refused their records. Fenced: PartitionLost is
   * thrown; any other failure (an outage) is thrown as it is.
   */
  private async commitAlone(kafkaTopic: string, partition: number, entry: ChunkEntry): Promise<GovernedMemoryError | undefined> {
    const key = partitionKey(kafkaTopic, partition);
    const alone = new ChunkCommitter(
      CHUNK_LIMITS,
      (chunk) => this.stalls.onKafka(key, () => this.commitChunk(kafkaTopic, partition, chunk)),
      () => this.owned.committed(kafkaTopic, partition, entry.next),
    );
    alone.add(entry);
    const failure = await alone.drain();
    if (failure === undefined) return undefined;
    if (failure.lost) throw new PartitionLost();
    const refusal = recordRefusal(failure.error);
    if (refusal === undefined) throw failure.error;
    // The aborted transaction's producer is not reused: the partition is owned again (fenced, its offset re-read).
    await this.owned.release(key);
    await this.stalls.onKafka(key, () => this.owned.own(key, kafkaTopic, partition));
    return new GovernedMemoryError('MEM_VALIDATION', `kafka refused the records sent for this message (${refusal})`, { cause: failure.error });
  }

  /** Hands the batch's messages to the handler in order; true when it stopped early. */
  private async handleBatch(batch: Batch, floor: number, payload: BatchPayload, chunks: ChunkCommitter): Promise<boolean> {
    const items = await this.itemsPastFloor(batch, floor);
    if (this.batchHandler !== undefined) return this.handleInBatches(this.batchHandler, items, payload, chunks);
    return this.handleEach(items, payload, chunks);
  }

  /**
   * The batch's messages past the floor, decoded, each with the offset its commit points to
   * (past the trailing transaction markers for the last one). Those below the floor the previous
   * owner handled and committed after our fetch position was chosen: they are only resolved.
   */
  private async itemsPastFloor(batch: Batch, floor: number): Promise<BatchItem[]> {
    const last = batch.messages.at(-1);
    const topic = this.deps.ns.portTopic(batch.topic);
    const items: BatchItem[] = [];
    for (const record of batch.messages) {
      const next = record === last ? Number(batch.lastOffset()) + 1 : Number(record.offset) + 1;
      if (Number(record.offset) < floor) {
        if (record === last && next > floor) {
          await this.commitOffsetOnly(batch.topic, batch.partition, next);
          this.owned.committed(batch.topic, batch.partition, next);
        }
        continue;
      }
      items.push({ message: decodeMessage(topic, batch.partition, record), next });
    }
    return items;
  }

  /**
   * A batch subscription: the items go to the batch handler a chunk's worth at a time, each
   * group's results one entry of the chunk committer. A group whose handler throws is split in
   * halves and each handed over again; a single message that still fails takes the per-message
   * path (retry, then dead letter), as in `handleEach`.
   */
  private async handleInBatches(handler: BatchHandler, items: readonly BatchItem[], payload: BatchPayload, chunks: ChunkCommitter): Promise<boolean> {
    for (let at = 0; at < items.length; at += this.batchMessages) {
      if (this.closing || !payload.isRunning() || payload.isStale()) return true;
      if (chunks.failed) return false;
      if (await this.runGroup(handler, items.slice(at, at + this.batchMessages), payload, chunks)) return true;
      await payload.heartbeat();
    }
    return false;
  }

  /** One attempt of the batch handler on `items`, split on failure; true when it stopped early. */
  private async runGroup(
    handler: BatchHandler, items: readonly BatchItem[], payload: Pick<EachBatchPayload, 'heartbeat'>, chunks: ChunkCommitter,
  ): Promise<boolean> {
    const first = items[0];
    const last = items.at(-1);
    if (first === undefined || last === undefined) return false;
    const run = items.length === 1
      ? await this.attempt(first.message)
      : await this.attemptWith(HandlerAttempt.runBatch(handler, [first.message, ...items.slice(1).map((i) => i.message)], this.attemptSettings));
    if (!run.failed) {
      chunks.add({ queued: run.queued, attempt: run, next: last.next });
      return false;
    }
    run.discarded();
    if (items.length === 1) return this.retryAlone(first, run.failure, payload, chunks);
    const middle = Math.ceil(items.length / 2);
    if (await this.runGroup(handler, items.slice(0, middle), payload, chunks)) return true;
    if (chunks.failed) return false;
    return this.runGroup(handler, items.slice(middle), payload, chunks);
  }

  /** Hands the items to the per-message handler in order; true when it stopped early. */
  private async handleEach(items: readonly BatchItem[], payload: BatchPayload, chunks: ChunkCommitter): Promise<boolean> {
    for (const item of items) {
      if (this.closing || !payload.isRunning() || payload.isStale()) return true;
      // A commit failed: nothing after it may commit, so handling more is wasted.
      if (chunks.failed) return false;
      const attempt = await this.attempt(item.message);
      if (attempt.failed) {
        attempt.discarded();
        if (await this.retryAlone(item, attempt.failure, payload, chunks)) return true;
      } else {
        chunks.add({ queued: attempt.queued, attempt, next: item.next });
      }
      await payload.heartbeat();
    }
    return false;
  }

  /** What was handled before the failed message commits first; then it is retried alone. True when stopped. */
  private async retryAlone(item: BatchItem, failure: unknown, payload: Pick<EachBatchPayload, 'heartbeat'>, chunks: ChunkCommitter): Promise<boolean> {
    if ((await chunks.drain()) !== undefined) return false;
    return (await this.retry(item.message, failure, { next: item.next }, payload.heartbeat)) === 'stopped';
  }

  /** One run of the handler; a send to a topic that does not exist fails it like a throw. */
  private attempt(message: ConsumedMessage): Promise<HandlerAttempt<EncodedMessage>> {
    return this.attemptWith(HandlerAttempt.run(this.handler, message, this.attemptSettings));
  }

  private async attemptWith(running: Promise<HandlerAttempt<EncodedMessage>>): Promise<HandlerAttempt<EncodedMessage>> {
    const attempt = await running;
    if (!attempt.failed && attempt.queued.length > 0) {
      try {
        await this.deps.transactions.route(attempt.queued);
      } catch (err) {
        if (!isValidationError(err)) {
          attempt.discarded();
          throw err;
        }
        attempt.fail(err);
      }
    }
    return attempt;
  }

  /**
   * Retry, then dead-letter: each result commits on its own before the batch goes on, so results
   * the broker refuses (too large, malformed) are this message's failure, retried like a throw.
   */
  private async retry(
    message: ConsumedMessage, firstFailure: unknown, position: { next: number }, heartbeat: () => Promise<void>,
  ): Promise<'stopped' | 'done'> {
    const kafkaTopic = this.deps.ns.topic(message.topic);
    let failure = firstFailure;
    for (let attempt = 1; ; attempt++) {
      if (this.retries.exhausted(attempt, failure)) return this.deadLetter(message, failure, attempt, position, heartbeat);
      if (await this.retries.backOff(message, attempt, failure)) return 'stopped';
      await heartbeat();
      const run = await this.attempt(message);
      if (run.failed) {
        run.discarded();
        failure = run.failure;
        continue;
      }
      failure = await this.commitAlone(kafkaTopic, message.partition, { queued: run.queued, attempt: run, ...position });
      if (failure === undefined) return 'done';
    }
  }

  /**
   * Commits the message's dead letter with its offset. A dead letter is bounded (deadLetterOf),
   * yet the broker may still refuse it (a topic's own smaller max.message.bytes): after
   * DEAD_LETTER_TRIES the message is skipped — its offset committed alone, an ALERT logged with
   * its coordinates only, onDeadLetterDropped told — so the partition goes on.
   */
  private async deadLetter(
    message: ConsumedMessage, failure: unknown, attempts: number, position: { next: number }, heartbeat: () => Promise<void>,
  ): Promise<'stopped' | 'done'> {
    await this.deps.ensureDeadLetterTopic(message.topic);
    const kafkaTopic = this.deps.ns.topic(message.topic);
    const error = errorMessage(failure);
    let refused: unknown;
    for (let tries = 1; tries <= DEAD_LETTER_TRIES; tries++) {
      if (tries > 1) {
        if (await this.retries.backOff(message, attempts, refused)) return 'stopped';
        await heartbeat();
      }
      let queued: EncodedMessage;
      try {
        queued = encodeMessage(deadLetterOf(message, this.groupId, error, attempts));
      } catch (err) {
        refused = err;
        continue;
      }
      refused = await this.commitAlone(kafkaTopic, message.partition, { queued: [queued], ...position });
      if (refused === undefined) {
        this.retries.deadLettered(message, attempts, error);
        return 'done';
      }
    }
    const key = partitionKey(kafkaTopic, message.partition);
    await this.stalls.onKafka(key, () => this.commitOffsetOnly(kafkaTopic, message.partition, position.next));
    this.owned.committed(kafkaTopic, message.partition, position.next);
    this.retries.deadLetterDropped(message, attempts, refused);
    return 'done';
  }

  private async commitChunk(kafkaTopic: string, partition: number, chunk: Chunk): Promise<void> {
    const lastEntry = chunk.entries.at(-1);
    if (lastEntry === undefined) return;
    const queued = chunk.entries.flatMap((e) => e.queued);
    const deferring = chunk.entries.some((e) => (e.attempt?.deferred.length ?? 0) > 0);
    if (queued.length === 0 && !deferring && this.lazy.enabled && chunk.entries.every((e) => e.attempt?.quiet === true)) {
      this.lazy.hold(kafkaTopic, partition, lastEntry.next);
      return;
    }
    if (queued.length === 0 && !deferring) {
      await this.commitOffsetOnly(kafkaTopic, partition, lastEntry.next);
      return;
    }
    if (!this.sends) {
      // Only dead letters are queued here (the handler's sends were refused): appended first,
      // so a crash before the commit dead-letters the message again rather than never.
      await this.deps.produce(queued);
      await this.commitOffsetOnly(kafkaTopic, partition, lastEntry.next);
      return;
    }
    // The transaction's offset reaches past whatever is held.
    this.lazy.covered(kafkaTopic, partition);
    const routed = await this.deps.transactions.route(queued);
    const producer = await this.owned.producer(partitionKey(kafkaTopic, partition), kafkaTopic, partition);
    // What sendWithPositions asked for, built from where each entry's own sends landed.
    const build = (written: readonly LogPosition[]): EncodedMessage[] => {
      let at = 0;
      return chunk.entries.flatMap((entry) => {
        const sent = written.slice(at, at + entry.queued.length);
        at += entry.queued.length;
        return entry.attempt === undefined ? [] : entry.attempt.buildDeferred(sent, encodeMessage);
      });
    };
    await this.deps.transactions.commit(producer, routed, {
      groupId: this.deps.ns.group(this.groupId),
      kafkaTopic,
      partitions: [{ partition, offset: lastEntry.next }],
    }, deferring ? build : undefined);
  }

  private lost(kafkaTopic: string, partition: number): Outcome {
    const key = partitionKey(kafkaTopic, partition);
    this.deps.logger.warn({ groupId: this.groupId, topic: this.deps.ns.portTopic(kafkaTopic), partition }, 'bus partition taken over by another member; its result was not committed');
    void this.owned.release(key);
    return 'lost';
  }

  /** A plain group commit: generation-fenced by the coordinator, so no producer is needed. */
  private async commitOffsetOnly(kafkaTopic: string, partition: number, offset: number): Promise<void> {
    this.lazy.covered(kafkaTopic, partition);
    await this.consumer.commitOffsets([{ topic: kafkaTopic, partition, offset: String(offset) }]);
  }

  /**
   * A fetched batch of only markers or aborted records (`from` to `next` − 1): commit past it, in
   * turn — but only once everything before it is committed. Fetched ahead, it may follow a batch
   * still being handled; queued behind that batch on the lock, it finds the floor at its start if
   * that batch committed. If that batch failed instead (its refetch is asked for), committing past
   * these markers had moved the group past the failed batch's messages, and the refetch skipped
   * them as committed: acknowledged writes were lost so under a broker kill (the fault suite).
   */
  private commitSkipped(kafkaTopic: string, partition: number, from: number, next: number): void {
    const key = partitionKey(kafkaTopic, partition);
    void this.owned.lock(key)
      .run(async () => {
        if (this.closing) return;
        const floor = await this.owned.own(key, kafkaTopic, partition);
        if (floor >= from && next > floor) {
          await this.commitOffsetOnly(kafkaTopic, partition, next);
          this.owned.committed(kafkaTopic, partition, next);
        }
      })
      .catch((err: unknown) => this.deps.logger.warn({ groupId: this.groupId, topic: kafkaTopic, partition, err: errorMessage(err) }, 'bus commit past transaction markers failed'));
  }
}

/** Every commit of `group` told to its listeners (a wait on it in another process ends at once). */
const announcing = (notices: Pick<CommitNotices, 'announce'>, group: string) => (topic: string, partition: number, next: number): void =>
  notices.announce({ group, topic, partition, next });

const isValidationError = (err: unknown): boolean => isGovernedMemoryError(err) && err.code === 'MEM_VALIDATION';
