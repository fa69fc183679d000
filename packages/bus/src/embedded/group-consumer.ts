/**
 * One subscription: a loop that walks the partitions this member owns and hands each one's
 * next batch of messages to the handler, then commits the offset past the batch together with
 * every send of the batch in one SQLite transaction. The committed offset in the file is the
 * only position there is — every fetch starts from it — so a member taking over a partition, a
 * restart and a replay after resetGroup all continue exactly where the group's last commit
 * left off.
 *
 * The loop visits only the partitions the bus told it were appended to (and every owned
 * partition after a membership change, or when a poll interval passes without news: another
 * process may have written the file). So an append to one partition wakes the groups reading
 * that topic, and each of them reads that one partition.
 *
 * With `lazyCommitMs`, a batch that sent nothing (and hooked nothing) is the exception: its
 * offset is held here and commits with the partition's next batch that sends, or when the
 * delay is up, whichever comes first. The fetch continues from the held offset; the commit is
 * still fenced on the file's offset, so a member that took the partition over meanwhile wins
 * or loses cleanly, as on any commit.
 *
 * A per-message handler runs on the batch's messages in turn; their results commit together.
 * When one fails, what was handled before it commits first; then it is retried on its own and
 * dead-lettered after `maxAttempts`, and the rest of the batch goes on. A batch handler that
 * throws has its batch split in halves, each handed over again, down to single messages.
 */
import { DEFAULT_BATCH_MESSAGES, deadLetterOf } from '../messages.ts';
import { errorMessage, type BusLogger } from '../bus-logger.ts';
import { HandlerAttempt, type AttemptSettings } from '../handler-attempt.ts';
import type { BatchHandler, ConsumedMessage, LogPosition, MessageHandler, OutgoingMessage, Subscription, SubscribeOptions } from '../port.ts';
import { RetryPolicy } from '../retry-policy.ts';
import type { GroupCoordinator, GroupMember } from './group-coordinator.ts';
import { lingerDelayMs } from './linger.ts';
import { Signal } from '../signal.ts';
import { serializeMessage, type ConsumedRange, type SerializedMessage, type SqliteLog } from './sqlite-log.ts';

export interface ConsumerDeps {
  log: SqliteLog;
  coordinator: GroupCoordinator;
  /** Tells the bus that this consumer committed, and where its sends were appended. */
  onCommitted(appended: readonly LogPosition[]): void;
  logger: BusLogger;
  pollIntervalMs: number;
}

/** The longest a handled message's results wait behind a slow successor before they commit. */
const MAX_RESULT_WAIT_MS = 25;

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

type Attempt = HandlerAttempt<SerializedMessage>;

const slot = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export class GroupConsumer implements Subscription, GroupMember {
  readonly groupId: string;
  readonly topics: readonly string[];
  private readonly handler: MessageHandler | undefined;
  private readonly batchHandler: BatchHandler | undefined;
  private readonly retries: RetryPolicy;
  /** Interrupts idle waits and retry back-off when the subscription closes. */
  private readonly stopping = new Signal();
  /** Notified by the bus when one of our topics was appended to (see `appended`). */
  private readonly wake = new Signal();
  /** Partitions appended to since they were last visited. */
  private readonly dirty = new Set<string>();
  private readonly lingerMs: number;
  private readonly lingerShare: number;
  /** How long each partition's last batch took (lingerShare). */
  private readonly busyMs = new Map<string, number>();
  /** Messages fetched per partition per visit (maxBatchMessages): one transaction's worth; bounds memory and keeps partitions interleaved. */
  private readonly batchSize: number;
  /** When each partition's last batch was handed over, and the wake-ups of lingering ones. */
  private readonly lastHandled = new Map<string, number>();
  private readonly lingering = new Map<string, NodeJS.Timeout>();
  private readonly lazyCommitMs: number;
  /** Per partition: quiet batches handled but not yet committed (lazyCommitMs), and the timer that commits them. */
  private readonly held = new Map<string, { range: ConsumedRange; timer: NodeJS.Timeout }>();
  /** Visit every owned partition next: at start, after a membership change, after an idle poll. */
  private fullScan = true;
  private seenMembership = -1;
  private closing = false;
  private loop: Promise<void> = Promise.resolve();
  private closed: Promise<void> | undefined;

  constructor(
    private readonly deps: ConsumerDeps,
    options: SubscribeOptions,
  ) {
    this.groupId = options.groupId;
    this.topics = [...new Set(options.topics)];
    this.handler = options.handler;
    this.batchHandler = options.batchHandler;
    this.retries = new RetryPolicy(options, { logger: deps.logger, stopping: this.stopping, closing: () => this.closing });
    this.lingerMs = options.lingerMs ?? 0;
    this.lingerShare = options.lingerShare ?? 1;
    this.batchSize = options.maxBatchMessages ?? DEFAULT_BATCH_MESSAGES;
    this.lazyCommitMs = options.lazyCommitMs ?? 0;
    this.attemptSettings = { encode: this.encode, logger: deps.logger, sends: options.sends !== false, groupId: options.groupId };
  }

  start(): void {
    this.deps.coordinator.join(this);
    this.loop = this.run();
  }

  /** Leaves the group at once (others take over), then waits for the in-flight batch. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      this.deps.coordinator.leave(this);
      this.stopping.notify();
      for (const timer of this.lingering.values()) clearTimeout(timer);
      this.lingering.clear();
      await this.loop;
      // What was handled commits now: the next owner need not handle it again.
      for (const key of [...this.held.keys()]) this.commitHeld(key);
    })();
    return this.closed;
  }

  /** The bus appended to `topic`/`partition`: visit it on the next round. */
  appended(topic: string, partition: number): void {
    if (!this.topics.includes(topic)) return;
    this.dirty.add(slot(topic, partition));
    this.wake.notify();
  }

  private async run(): Promise<void> {
    const { coordinator, logger, pollIntervalMs, log } = this.deps;
    while (!this.closing) {
      const membership = coordinator.changed.version;
      let visit: ReadonlySet<string> | undefined;
      if (this.fullScan || membership !== this.seenMembership) {
        this.dirty.clear();
        this.fullScan = false;
      } else {
        visit = new Set(this.dirty);
        this.dirty.clear();
      }
      this.seenMembership = membership;
      try {
        await this.scan(visit);
      } catch (err) {
        // The log itself failed (disk, lock timeout): nothing was committed; visit everything again later.
        logger.warn({ groupId: this.groupId, err: errorMessage(err) }, 'bus consumer scan failed');
        this.fullScan = true;
        if (await this.backOff(pollIntervalMs)) return;
        continue;
      }
      // An append or membership change during the scan must not be slept through.
      if (this.closing || this.dirty.size > 0 || coordinator.changed.version !== membership) continue;
      const woken = this.wake.version;
      await Signal.any([this.wake, coordinator.changed, this.stopping], pollIntervalMs);
      if (this.wake.version === woken && coordinator.changed.version === membership && !this.closing) {
        // A quiet interval: another process may have appended, or grown a topic.
        log.refreshTopics();
        this.fullScan = true;
      }
    }
  }

  /** One visit of the owned partitions (only those in `visit`, when given). */
  private async scan(visit: ReadonlySet<string> | undefined): Promise<void> {
    const { log, coordinator } = this.deps;
    for (const topic of this.topics) {
      const info = log.topic(topic);
      if (info === undefined) continue;
      for (const partition of coordinator.assigned(this, topic, info.partitions)) {
        if (this.closing) return;
        const key = slot(topic, partition);
        if (visit !== undefined && !visit.has(key)) continue;
        if (this.lingerMs > 0 && this.linger(key)) continue;
        // The previous owner is still handling a batch of it; its unlock wakes us (a membership notify).
        if (!coordinator.tryLock(this.groupId, topic, partition)) continue;
        try {
          const started = this.lingerMs > 0 ? performance.now() : 0;
          // Handled something: there may be more, so come back without waiting.
          if (await this.drain(topic, partition)) {
            this.dirty.add(key);
            if (this.lingerMs > 0) {
              const ended = performance.now();
              this.lastHandled.set(key, ended);
              this.busyMs.set(key, ended - started);
            }
          } else if (this.lingerMs > 0) {
            // Nothing to handle: this partition no longer keeps the others lingering.
            this.busyMs.delete(key);
          }
        } finally {
          coordinator.unlock(this.groupId, topic, partition);
        }
      }
    }
  }

  /** True while the partition must still linger (lingerDelayMs): it is visited again once that has passed. */
  private linger(key: string): boolean {
    const last = this.lastHandled.get(key);
    if (last === undefined) return false;
    let busyMs = 0;
    for (const ms of this.busyMs.values()) busyMs += ms;
    const wait = lingerDelayMs({ lingerMs: this.lingerMs, share: this.lingerShare, busyMs, sinceLastMs: performance.now() - last });
    if (wait <= 0) return false;
    if (!this.lingering.has(key)) {
      const timer = setTimeout(() => {
        this.lingering.delete(key);
        this.dirty.add(key);
        this.wake.notify();
      }, wait);
      this.lingering.set(key, timer);
    }
    return true;
  }

  private async drain(topic: string, partition: number): Promise<boolean> {
    const { log, coordinator } = this.deps;
    const from = this.held.get(slot(topic, partition))?.range.next ?? log.committed(this.groupId, topic, partition);
    const batch = log.fetch(topic, partition, from, this.batchSize);
    const first = batch[0];
    if (first === undefined || this.closing || !coordinator.owns(this, topic, partition)) return false;
    if (this.batchHandler !== undefined) await this.handleBatch(this.batchHandler, [first, ...batch.slice(1)]);
    else if (this.handler !== undefined) await this.handleEach(this.handler, batch);
    return true;
  }

  /** Checks a send's topic at send time: an unknown topic fails the handler, never the batch's commit. */
  private readonly encode = (m: OutgoingMessage, index: number): SerializedMessage => {
    const serialized = serializeMessage(m, index);
    this.deps.log.requireTopic(serialized.topic);
    return serialized;
  };

  /** How attempts of this subscription run (sends: false refuses sends in the handler, as on Kafka). */
  private readonly attemptSettings: AttemptSettings<SerializedMessage>;

  private attemptOne(message: ConsumedMessage): Promise<Attempt> {
    if (this.handler !== undefined) return HandlerAttempt.run(this.handler, message, this.attemptSettings);
    if (this.batchHandler !== undefined) return HandlerAttempt.runBatch(this.batchHandler, [message], this.attemptSettings);
    throw new Error('subscription without a handler');
  }

  /** Per-message handler: the batch's results commit together, up to a failing message. */
  private async handleEach(handler: MessageHandler, batch: readonly ConsumedMessage[]): Promise<void> {
    let done: Attempt[] = [];
    let from: number | undefined;
    let next = 0;
    for (const message of batch) {
      if (this.closing) break;
      const running = HandlerAttempt.run(handler, message, this.attemptSettings);
      if (from !== undefined && (await settlesWithin(running, MAX_RESULT_WAIT_MS)) === false) {
        // A slow handler: what was handled before it commits now rather than wait behind it.
        if (!this.commit(done, { topic: message.topic, partition: message.partition, from, next })) {
          (await running).discarded();
          return;
        }
        done = [];
        from = undefined;
      }
      const run = await running;
      if (!run.failed) {
        from ??= message.offset;
        next = message.offset + 1;
        done.push(run);
        continue;
      }
      run.discarded();
      if (from !== undefined && !this.commit(done, { topic: message.topic, partition: message.partition, from, next })) return;
      done = [];
      from = undefined;
      if (!(await this.retry(message, run.failure))) return;
    }
    const last = batch.at(-1);
    if (from !== undefined && last !== undefined) this.commit(done, { topic: last.topic, partition: last.partition, from, next });
  }

  /** Batch handler: one attempt on the whole batch; on failure each half on its own, down to single messages. */
  private async handleBatch(handler: BatchHandler, batch: readonly [ConsumedMessage, ...ConsumedMessage[]]): Promise<boolean> {
    if (this.closing) return false;
    const [first] = batch;
    const run = batch.length === 1 ? await this.attemptOne(first) : await HandlerAttempt.runBatch(handler, batch, this.attemptSettings);
    const last = batch.at(-1) ?? first;
    if (!run.failed) return this.commit([run], { topic: first.topic, partition: first.partition, from: first.offset, next: last.offset + 1 });
    run.discarded();
    if (batch.length === 1) return this.retry(first, run.failure);
    const middle = Math.ceil(batch.length / 2);
    const left = batch.slice(0, middle);
    const right = batch.slice(middle);
    const [l0, r0] = [left[0], right[0]];
    if (l0 === undefined || r0 === undefined) return false;
    return (await this.handleBatch(handler, [l0, ...left.slice(1)])) && this.handleBatch(handler, [r0, ...right.slice(1)]);
  }

  /**
   * Commits handled attempts with the range they consumed; true when it landed. Fenced (the
   * group moved on without us) or failed (the log: disk, lock), every attempt is discarded and
   * the partition is fetched again from wherever the group's offset is.
   */
  private commit(attempts: readonly Attempt[], handled: ConsumedRange, mayHold = true): boolean {
    const key = slot(handled.topic, handled.partition);
    const held = this.held.get(key);
    // Held quiet batches end where this one starts (the fetch went on from them): one range.
    const range = held === undefined ? handled : { ...handled, from: held.range.from };
    if (mayHold && this.lazyCommitMs > 0 && attempts.every((a) => a.quiet)) {
      this.held.set(key, { range, timer: held?.timer ?? setTimeout(() => this.commitHeld(key), this.lazyCommitMs).unref() });
      for (const a of attempts) a.committed();
      return true;
    }
    if (held !== undefined) {
      clearTimeout(held.timer);
      this.held.delete(key);
    }
    let written: LogPosition[] | undefined;
    try {
      written = this.deps.log.commit(this.groupId, range, attempts.map((a) => ({
        sends: a.queued,
        ...(a.deferred.length === 0 ? {} : { build: (sent: readonly LogPosition[]) => a.buildDeferred(sent, this.encode) }),
      })));
    } catch (err) {
      for (const a of attempts) a.discarded();
      this.deps.logger.warn({ groupId: this.groupId, topic: range.topic, partition: range.partition, offset: range.from, err: errorMessage(err) }, 'bus commit failed');
      this.fullScan = true;
      return false;
    }
    if (written === undefined) {
      for (const a of attempts) a.discarded();
      return false;
    }
    for (const a of attempts) a.committed();
    this.deps.onCommitted(written);
    return true;
  }

  /** Commits a partition's held quiet batches; false when that failed or was fenced (they are handled again from the file's offset). */
  private commitHeld(key: string): boolean {
    const held = this.held.get(key);
    if (held === undefined) return true;
    clearTimeout(held.timer);
    this.held.delete(key);
    return this.commit([], held.range, false);
  }

  /**
   * A message whose handler failed once: retried alone (its result committed on its own), and
   * dead-lettered after `maxAttempts`. False when the batch must stop: closing, or fenced.
   */
  private async retry(message: ConsumedMessage, firstFailure: unknown): Promise<boolean> {
    let failure = firstFailure;
    for (let attempt = 1; ; attempt++) {
      if (this.retries.exhausted(attempt, failure)) return this.deadLetter(message, failure, attempt);
      if (await this.retries.backOff(message, attempt, failure)) return false;
      const run = await this.attemptOne(message);
      if (!run.failed) return this.commit([run], { topic: message.topic, partition: message.partition, from: message.offset, next: message.offset + 1 });
      run.discarded();
      failure = run.failure;
    }
  }

  private deadLetter(message: ConsumedMessage, err: unknown, attempts: number): boolean {
    // The dead-letter commit is fenced on the message's own offset: what is held before it goes first.
    if (!this.commitHeld(slot(message.topic, message.partition))) return false;
    const error = errorMessage(err);
    const dlqMessage = serializeMessage(deadLetterOf(message, this.groupId, error, attempts));
    const written = this.deps.log.deadLetter(this.groupId, message, dlqMessage);
    // Fenced: another consumer already moved past this message; nothing was written.
    if (written === undefined) return false;
    this.deps.onCommitted(written);
    this.retries.deadLettered(message, attempts, error);
    return true;
  }

  /** Resolves true when the subscription is closing (the wait was cut short). */
  private async backOff(delayMs: number): Promise<boolean> {
    if (!this.closing) await Signal.any([this.stopping], delayMs);
    return this.closing;
  }
}
