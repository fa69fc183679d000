/**
 * One subscription: a loop that walks the partitions this member owns, hands each message to
 * the handler, and commits the offset together with the handler's queued sends in one SQLite
 * transaction. The committed offset in the file is the only position there is — every fetch
 * starts from it — so a member taking over a partition, a restart and a replay after
 * resetGroup all continue exactly where the group's last commit left off.
 */
import { deadLetterOf } from '../messages.ts';
import { isDependencyOutage, retryDelayMs } from '@gm/contracts';
import { HandlerAttempt } from '../handler-attempt.ts';
import type { ConsumedMessage, MessageHandler, Subscription, SubscribeOptions } from '../port.ts';
import type { GroupCoordinator, GroupMember } from './group-coordinator.ts';
import { Signal } from './signal.ts';
import { serializeMessage, type SqliteLog } from './sqlite-log.ts';

export interface BusLogger {
  warn(obj: object, msg: string): void;
}

export interface ConsumerDeps {
  log: SqliteLog;
  coordinator: GroupCoordinator;
  /** Notified after every append; the consumer's wake-up. */
  appended: Signal;
  /** Tells the bus that this consumer committed (and whether that appended messages). */
  onCommitted(appended: boolean): void;
  logger: BusLogger;
  pollIntervalMs: number;
}

/** Messages fetched per partition per visit: bounds memory and keeps partitions interleaved. */
const BATCH_SIZE = 64;

export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class GroupConsumer implements Subscription, GroupMember {
  readonly groupId: string;
  readonly topics: readonly string[];
  private readonly handler: MessageHandler;
  private readonly maxAttempts: number;
  private readonly retryBackoffMs: number;
  /** Interrupts idle waits and retry back-off when the subscription closes. */
  private readonly stopping = new Signal();
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
    this.maxAttempts = options.maxAttempts ?? 5;
    this.retryBackoffMs = options.retryBackoffMs ?? 50;
  }

  start(): void {
    this.deps.coordinator.join(this);
    this.loop = this.run();
  }

  /** Leaves the group at once (others take over), then waits for the in-flight message. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing = true;
      this.deps.coordinator.leave(this);
      this.stopping.notify();
      await this.loop;
    })();
    return this.closed;
  }

  private async run(): Promise<void> {
    const { appended, coordinator, logger, pollIntervalMs } = this.deps;
    while (!this.closing) {
      // A notify between the end of the scan and the wait must not be slept through.
      const seen = appended.version + coordinator.changed.version;
      let again = false;
      try {
        again = await this.scan();
      } catch (err) {
        // The log itself failed (disk, lock timeout): nothing was committed; try again later.
        logger.warn({ groupId: this.groupId, err: errorMessage(err) }, 'bus consumer scan failed');
      }
      const changed = appended.version + coordinator.changed.version !== seen;
      if (!again && !changed && !this.closing) {
        await Signal.any([appended, coordinator.changed, this.stopping], pollIntervalMs);
      }
    }
  }

  /** One visit of every owned partition; true when it should run again without waiting. */
  private async scan(): Promise<boolean> {
    const { log, coordinator } = this.deps;
    let again = false;
    for (const topic of this.topics) {
      const info = log.topic(topic);
      if (info === undefined) continue;
      for (const partition of coordinator.assigned(this, topic, info.partitions)) {
        if (this.closing) return false;
        // The previous owner is still handling a message of it; its unlock wakes us.
        if (!coordinator.tryLock(this.groupId, topic, partition)) continue;
        try {
          if (await this.drain(topic, partition)) again = true;
        } finally {
          coordinator.unlock(this.groupId, topic, partition);
        }
      }
    }
    return again;
  }

  private async drain(topic: string, partition: number): Promise<boolean> {
    const { log, coordinator } = this.deps;
    const batch = log.fetch(topic, partition, log.committed(this.groupId, topic, partition), BATCH_SIZE);
    for (const message of batch) {
      if (this.closing || !coordinator.owns(this, topic, partition)) return false;
      // Someone else moved the group's offset (another process, a reset): refetch from it.
      if (log.committed(this.groupId, topic, partition) !== message.offset) return true;
      await this.process(message);
    }
    return batch.length > 0;
  }

  private async process(message: ConsumedMessage): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const run = await HandlerAttempt.run(this.handler, message, serializeMessage, this.deps.logger);
      let failure = run.failure;
      if (!run.failed) {
        try {
          const written = this.deps.log.commit(this.groupId, message, run.queued);
          if (written === undefined) {
            // Fenced: another consumer already moved past this message; nothing was written.
            run.discarded();
            return;
          }
          run.committed();
          this.deps.onCommitted(written.length > 0);
          return;
        } catch (err) {
          failure = err;
        }
      }
      run.discarded();
      // An outage of a dependency is not the message's fault: retry it for as long as it lasts.
      if (attempt >= this.maxAttempts && !isDependencyOutage(failure)) {
        this.deadLetter(message, failure, attempt);
        return;
      }
      this.deps.logger.warn(
        { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempt, err: errorMessage(failure) },
        'bus handler failed; retrying',
      );
      // Closing during back-off leaves the message uncommitted; the next owner retries it.
      if (await this.backOff(retryDelayMs(this.retryBackoffMs, attempt))) return;
    }
  }

  private deadLetter(message: ConsumedMessage, err: unknown, attempts: number): void {
    const error = errorMessage(err);
    const dlqMessage = serializeMessage(deadLetterOf(message, this.groupId, error, attempts));
    const written = this.deps.log.deadLetter(this.groupId, message, dlqMessage);
    // Fenced: another consumer already moved past this message; nothing was written.
    if (written === undefined) return;
    this.deps.onCommitted(true);
    this.deps.logger.warn(
      { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempts, err: error },
      'bus message dead-lettered',
    );
  }

  /** Resolves true when the subscription is closing (the wait was cut short). */
  private async backOff(delayMs: number): Promise<boolean> {
    if (!this.closing) await Signal.any([this.stopping], delayMs);
    return this.closing;
  }
}
