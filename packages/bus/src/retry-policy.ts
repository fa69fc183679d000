/**
 * What a subscription does with a message whose handler failed, the same on both adapters: it
 * is retried alone after a back-off that doubles per attempt (retryDelayMs), and dead-lettered
 * on its `maxAttempts`-th failure — unless that failure is an outage of a dependency, which is
 * not the message's fault: it is retried for as long as the outage lasts. Where the retry's
 * result and the dead letter are committed is each adapter's own (group-consumer.ts,
 * kafka-subscription.ts).
 */
import { isDependencyOutage, retryDelayMs } from '@gm/contracts';
import { errorMessage, type BusLogger } from './bus-logger.ts';
import type { ConsumedMessage, SubscribeOptions } from './port.ts';
import { Signal } from './signal.ts';

export interface RetryDeps {
  logger: BusLogger;
  /** Notified when the subscription closes: cuts a back-off short. */
  stopping: Signal;
  closing(): boolean;
}

export class RetryPolicy {
  readonly maxAttempts: number;
  readonly retryBackoffMs: number;
  private readonly groupId: string;
  private readonly onDeadLettered: SubscribeOptions['onDeadLettered'];
  private readonly onDeadLetterDropped: SubscribeOptions['onDeadLetterDropped'];

  constructor(
    options: Pick<SubscribeOptions, 'groupId' | 'maxAttempts' | 'retryBackoffMs' | 'onDeadLettered' | 'onDeadLetterDropped'>,
    private readonly deps: RetryDeps,
  ) {
    this.groupId = options.groupId;
    this.onDeadLettered = options.onDeadLettered;
    this.onDeadLetterDropped = options.onDeadLetterDropped;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.retryBackoffMs = options.retryBackoffMs ?? 50;
  }

  /** Whether the message is dead-lettered now, its `attempt`-th run having failed with `failure`. */
  exhausted(attempt: number, failure: unknown): boolean {
    return attempt >= this.maxAttempts && !isDependencyOutage(failure);
  }

  /**
   * Reports the failed `attempt` and waits out the back-off before the next. True when the
   * subscription is closing: the message stays uncommitted, and its next owner retries it.
   */
  async backOff(message: ConsumedMessage, attempt: number, failure: unknown): Promise<boolean> {
    this.deps.logger.warn(
      { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempt, err: errorMessage(failure) },
      'bus handler failed; retrying',
    );
    if (!this.deps.closing()) await Signal.any([this.deps.stopping], retryDelayMs(this.retryBackoffMs, attempt));
    return this.deps.closing();
  }

  /** Reports a dead letter once it is committed. */
  deadLettered(message: ConsumedMessage, attempts: number, error: string): void {
    this.deps.logger.warn(
      { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempts, err: error },
      'bus message dead-lettered',
    );
    this.onDeadLettered?.(message);
  }

  /**
   * Reports a message skipped because the broker refused its dead letter too: an ALERT, with its
   * coordinates and the refusal only — never its value, key or headers (design §10).
   */
  deadLetterDropped(message: ConsumedMessage, attempts: number, refusal: unknown): void {
    this.deps.logger.warn(
      { groupId: this.groupId, topic: message.topic, partition: message.partition, offset: message.offset, attempts, err: errorMessage(refusal) },
      'ALERT bus dead letter refused by the broker; the message was skipped unrecorded',
    );
    this.onDeadLetterDropped?.(message);
  }
}
