/**
 * The bus port: a Kafka-shaped log. Topics have partitions; a message's key fixes its
 * partition (and so its order); consumer groups commit offsets. The embedded adapter keeps
 * the log in SQLite; the distributed one is Kafka. Both must pass `testBus` (packages/testing).
 *
 * Offsets follow Kafka: a committed offset is the *next* offset the group will read.
 */
export interface TopicSpec {
  name: string;
  partitions: number;
  /** Compacted topics keep the last value per key (memory.records, memory.keys). */
  compacted?: boolean;
  /** Kafka topic configs set at creation (an existing topic keeps its own); the embedded log ignores them. */
  config?: Record<string, string>;
  /** Kafka topic configs of its `.dlq` (default none): dead letters of a topic with bounded retention keep the same bound. */
  deadLetterConfig?: Record<string, string>;
  /**
   * `false`: no `.dlq` is created with it. For a topic nobody in the deployment consumes (a
   * tenant's ingest results, read only by that tenant's producers), a `.dlq` would stay empty.
   */
  deadLetters?: false;
}

export interface OutgoingMessage {
  topic: string;
  key: string;
  /** Any JSON-serialisable value. */
  value: unknown;
  headers?: Record<string, string>;
}

export interface LogPosition {
  topic: string;
  partition: number;
  offset: number;
}

export interface ConsumedMessage extends LogPosition {
  key: string;
  value: unknown;
  headers: Record<string, string>;
  /** Append time, epoch milliseconds. */
  timestamp: number;
}

/**
 * What a handler may do besides its own side effects: queue messages that the bus appends
 * atomically together with the commit of the consumed offset (Kafka: one transaction with
 * sendOffsets). Either all of them and the offset land, or none.
 */
export interface ProcessContext {
  send(messages: OutgoingMessage[]): void;
  /**
   * Queues messages that say where this attempt's sends landed: inside the same transaction,
   * once the bus has appended everything this attempt queued with `send`, it calls `build` with
   * those positions (in send order) and appends what it returns after them. Write-admission's
   * reply names the offsets of its own events this way, so the API waits for exactly those.
   * `build` must be pure and must not throw. Messages to sealed topics (memory.commands,
   * memory.events) cannot be built this way: they are sealed asynchronously, before the commit.
   */
  sendWithPositions(build: (sent: readonly LogPosition[]) => OutgoingMessage[]): void;
  /**
   * Runs `fn` once the transaction holding this message's results (its sends and its offset)
   * committed. The bus may commit several messages of a partition in one transaction, so a
   * handler that keeps state in memory must treat what it derived as provisional until then.
   * Hooks run in handling order; never for results that were not committed.
   */
  onCommitted(fn: () => void): void;
  /**
   * Runs `fn` when this attempt's results will never be committed: the handler threw, or the
   * transaction holding them was aborted or fenced. It runs before the partition's messages
   * are handed over again, so provisional state can be dropped in time. A crash runs nothing
   * (the memory is gone with the process).
   */
  onDiscarded(fn: () => void): void;
}

export type MessageHandler = (message: ConsumedMessage, ctx: ProcessContext) => Promise<void>;

/**
 * Handles consecutive messages of one partition at once (in offset order). Everything it
 * sends commits in one transaction with the offset past the last message: all of it or none.
 * A batch whose handler throws is split in halves and each half handed over again, down to
 * single messages, which are retried and dead-lettered alone as with `handler` — so a poison
 * message never blocks or dead-letters its neighbours. A handler must therefore be idempotent
 * for any regrouping of the same messages (consumers are idempotent anyway: a redelivered
 * message changes nothing).
 */
export type BatchHandler = (messages: readonly ConsumedMessage[], ctx: ProcessContext) => Promise<void>;

export interface SubscriptionSettings {
  groupId: string;
  topics: string[];
  /** Where a group without a committed offset starts: true = earliest (default), false = latest. */
  fromBeginning?: boolean;
  /**
   * Attempts per message before it is dead-lettered to `<topic>.dlq` (default 5). A handler
   * error that is a dependency outage (`isDependencyOutage`: MEM_UNAVAILABLE, retriable) is
   * retried without limit and never dead-lettered: an outage delays work, it never drops it.
   */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt, capped at 5 s (default 50 ms). */
  retryBackoffMs?: number;
  /**
   * For consumers off the read-your-writes path (summaries, the expiry schedule): a partition
   * is handed over at most once per `lingerMs` (default 0), so under load its batches grow and
   * per-batch work (a summary rebuilt once per scope per batch) is shared by more messages. The
   * group then lags by up to this much.
   */
  lingerMs?: number;
  /**
   * With `lingerMs`, the largest share of time (0–1] the group's handler may take, embedded bus
   * only: after a round of batches that took `busy` ms in all, a partition lingers at least
   * busy × (1/share − 1). A handler whose cost grows with the data (a summary rebuild reads its
   * whole subject) then keeps to that share of its thread however large the data grows; its
   * batches grow and the group lags further instead. Default 1: `lingerMs` alone.
   */
  lingerShare?: number;
  /**
   * Messages handed to one `batchHandler` call (default 256, at most 8,192). A lingering group
   * whose per-batch work is per scope, not per message (a summary rebuilt once per subject),
   * takes more at once: with 256, a batch of 200 subjects' writes rebuilt nearly one scope per
   * event. Both buses bound one call by it; the Kafka adapter still commits per chunk.
   */
  maxBatchMessages?: number;
  /**
   * For groups nobody waits on (a waitForCommitted waiter would wait this much longer): a batch
   * whose handler sent nothing and registered no hook may commit its offset up to `lazyCommitMs`
   * later (default 0: at once), together with the next batch that does send. A crash before
   * that re-handles those messages, as a crash before any commit does. On Kafka, quiet chunks
   * of a partition are committed together, one group commit per partition per `lazyCommitMs`.
   */
  lazyCommitMs?: number;
  /**
   * Whether the handler sends (default true). With `false`, `ctx.send` and `ctx.sendWithPositions`
   * throw MEM_VALIDATION (the attempt fails like any throw) and every commit is a plain group
   * commit: the Kafka adapter opens no transactional producer, so no transactional id, for the
   * group. Its dead letters are then appended before its offset commits rather than with it: a
   * crash or a lost partition in between may dead-letter a message twice (never lose one). The
   * embedded bus still appends them in the same transaction.
   */
  sends?: boolean;
  /**
   * A group of this subscription alone, whose offsets nobody needs once it closed: a broadcast
   * follower (every process reads every message for itself: the key store's, the API's replies).
   * Subscribing first deletes what a crashed predecessor of the same name left (its offsets; on
   * Kafka it waits out that member's session) and refuses with MEM_CONFLICT while another live
   * member holds the group; closing deletes the group. Requires `sends: false` (a transactional id
   * per partition would outlive the group). A process that dies without closing leaves the group
   * to the next subscriber of its name, or to an operator (docs/operations.md).
   */
  transient?: boolean;
  /**
   * Called once a message the handler kept failing is committed to `<topic>.dlq` (not for a
   * handler's own dead letters): what `gm_dead_letters_total` counts (meteredBus).
   */
  onDeadLettered?: (message: ConsumedMessage) => void;
  /**
   * Called once a message was skipped because its dead letter could not be written either (the
   * broker refused it a few times over): what `gm_dead_letters_dropped_total` counts. Dead letters
   * are bounded (deadLetterOf), so this takes a topic configured below the bus's own bounds.
   */
  onDeadLetterDropped?: (message: ConsumedMessage) => void;
}

/**
 * Exactly one of `handler` (one message at a time; the bus still commits several handled
 * messages of a partition in one transaction) or `batchHandler` (a partition's batch at once).
 */
export type SubscribeOptions = SubscriptionSettings & (
  | { handler: MessageHandler; batchHandler?: never }
  | { batchHandler: BatchHandler; handler?: never }
);

export interface Subscription {
  /** Stops fetching, lets the in-flight messages finish and commit, then resolves. */
  close(): Promise<void>;
}

/** Which messages a partition read yields. */
export interface ReadOptions {
  /** Only messages with one of these keys. */
  keys?: ReadonlySet<string>;
}

export interface Bus {
  /**
   * Creates missing topics (and their `.dlq`). Idempotent. An existing topic keeps its partition
   * count: a spec naming another count throws PartitionCountMismatchError (the topic and both
   * counts) before anything is created.
   */
  ensureTopics(specs: TopicSpec[]): Promise<void>;
  /** Appends all messages atomically; returns each one's position, in input order. */
  produce(messages: OutgoingMessage[]): Promise<LogPosition[]>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /**
   * Resolves true once `groupId` has committed past `position` (committed > offset), false
   * after `timeoutMs`. The API uses it to keep read-your-writes promises.
   */
  waitForCommitted(groupId: string, position: LogPosition, timeoutMs: number): Promise<boolean>;
  /** Every message of a topic from the beginning, partition by partition, in offset order. */
  readAll(topic: string): AsyncIterable<ConsumedMessage>;
  /**
   * The messages of one partition from `fromOffset` (inclusive) to its current end, in order;
   * with `options.keys`, only the messages of those keys (a reader that wants one aggregate's
   * history leaves the others' unparsed and, on a sealed view, unopened).
   */
  readPartition(topic: string, partition: number, fromOffset: number, options?: ReadOptions): AsyncIterable<ConsumedMessage>;
  /** Next offset per partition (index = partition). */
  endOffsets(topic: string): Promise<number[]>;
  committedOffsets(groupId: string, topic: string): Promise<number[]>;
  /** Forgets a group's committed offsets so it re-reads from the start (replay). Group must be idle. */
  resetGroup(groupId: string): Promise<void>;
  /**
   * Sets an idle group's committed offsets of a topic (index = partition): where a rebuild from
   * the log hands the topic back to the group's consumers. A group with members: MEM_CONFLICT.
   */
  setCommittedOffsets(groupId: string, topic: string, offsets: readonly number[]): Promise<void>;
  partitionFor(topic: string, key: string): number;
  close(): Promise<void>;
}

/** Headers of a dead-lettered message: where it came from and why it failed. */
export interface DeadLetterHeaders {
  'dlq.topic': string;
  'dlq.partition': string;
  'dlq.offset': string;
  'dlq.error': string;
  'dlq.attempts': string;
  'dlq.group': string;
}

/** A consumer group committed one partition of a topic: `next` is the offset it reads next. Kafka names (namespace included). */
export interface CommitNotice {
  group: string;
  topic: string;
  partition: number;
  next: number;
}

/**
 * Commits told across processes (design §9): a group's commits are announced as they happen, so
 * a read-your-writes wait in another process learns of them at once instead of fetching the
 * group's offsets every few milliseconds. Best effort by contract: a notice may be lost (a
 * reconnect) or never sent (an announcer without a channel), so a listener keeps a slow poll of
 * the offsets beside it; notices only make waits end sooner and cheaper, never end one wrongly.
 */
export interface CommitNotices {
  /** Fire and forget: a failure to announce is swallowed (the listeners' poll covers it). */
  announce(notice: CommitNotice): void;
  /** Notices of `group` from now on; resolves once listening, and returns how to stop. */
  listen(group: string, onNotice: (notice: CommitNotice) => void): Promise<() => void>;
  close(): Promise<void>;
}
