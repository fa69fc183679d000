/**
 * One run of a handler on one message or one batch, as both adapters drive it: the context the
 * handler gets, what it queued, and the commit/discard hooks it registered — settled exactly
 * once, by whoever learns the fate of the transaction that carries the results.
 */
import { GovernedMemoryError } from '@gm/contracts';
import { errorMessage, type BusLogger } from './bus-logger.ts';
import type { BatchHandler, ConsumedMessage, LogPosition, MessageHandler, OutgoingMessage, ProcessContext } from './port.ts';

/** How an adapter runs attempts of one subscription. */
export interface AttemptSettings<Encoded> {
  encode: (m: OutgoingMessage, index: number) => Encoded;
  logger: BusLogger;
  /** False for a group subscribed with `sends: false`: its ctx refuses sends (SubscriptionSettings.sends). */
  sends: boolean;
  groupId: string;
}

export class HandlerAttempt<Encoded> {
  readonly queued: Encoded[] = [];
  /** What `sendWithPositions` asked for: built inside the commit, from where `queued` landed. */
  readonly deferred: Array<(sent: readonly LogPosition[]) => OutgoingMessage[]> = [];
  /** Why the handler failed; undefined when it returned. */
  failure: unknown;
  failed = false;
  private readonly onCommit: Array<() => void> = [];
  private readonly onDiscard: Array<() => void> = [];
  private open = true;
  private settled = false;

  private constructor(
    /** The first message handled: where hook failures are reported. */
    readonly message: ConsumedMessage,
    private readonly logger: BusLogger,
  ) {}

  /** Runs the handler once; a throw is recorded in `failure`, never rethrown. */
  static run<Encoded>(handler: MessageHandler, message: ConsumedMessage, settings: AttemptSettings<Encoded>): Promise<HandlerAttempt<Encoded>> {
    return HandlerAttempt.invoke(message, (ctx) => handler(message, ctx), settings);
  }

  /** Runs a batch handler once on consecutive messages of one partition (at least one). */
  static runBatch<Encoded>(
    handler: BatchHandler, messages: readonly [ConsumedMessage, ...ConsumedMessage[]], settings: AttemptSettings<Encoded>,
  ): Promise<HandlerAttempt<Encoded>> {
    return HandlerAttempt.invoke(messages[0], (ctx) => handler(messages, ctx), settings);
  }

  private static async invoke<Encoded>(
    first: ConsumedMessage, call: (ctx: ProcessContext) => Promise<void>, { encode, logger, sends, groupId }: AttemptSettings<Encoded>,
  ): Promise<HandlerAttempt<Encoded>> {
    const attempt = new HandlerAttempt<Encoded>(first, logger);
    const whileOpen = (what: string): void => {
      if (!attempt.open) throw new Error(`ctx.${what} was called after the handler settled; it would be lost`);
    };
    const sending = (what: string): void => {
      whileOpen(what);
      // Thrown where the handler sends: no transaction could carry the send with the offset.
      if (!sends) throw new GovernedMemoryError('MEM_VALIDATION', `ctx.${what}: group "${groupId}" was subscribed with sends: false`);
    };
    const ctx: ProcessContext = {
      send: (messages) => {
        sending('send');
        // Encoded now: the handler sees a bad value at once, and later mutation cannot leak in.
        attempt.queued.push(...messages.map((m, i) => encode(m, i)));
      },
      sendWithPositions: (build) => {
        sending('sendWithPositions');
        attempt.deferred.push(build);
      },
      onCommitted: (fn) => {
        whileOpen('onCommitted');
        attempt.onCommit.push(fn);
      },
      onDiscarded: (fn) => {
        whileOpen('onDiscarded');
        attempt.onDiscard.push(fn);
      },
    };
    try {
      await call(ctx);
    } catch (err) {
      attempt.fail(err);
    } finally {
      attempt.open = false;
    }
    return attempt;
  }

  /**
   * The messages `sendWithPositions` builds from where this attempt's sends landed (`sent`, in
   * send order), encoded like its other sends.
   */
  buildDeferred(sent: readonly LogPosition[], encode: (m: OutgoingMessage, index: number) => Encoded): Encoded[] {
    return this.deferred.flatMap((build) => build(sent)).map((m, i) => encode(m, i));
  }

  /** Sent nothing and registered no hook: committing it changes nothing but the offset. */
  get quiet(): boolean {
    return this.queued.length === 0 && this.deferred.length === 0 && this.onCommit.length === 0 && this.onDiscard.length === 0;
  }

  /** Marks a handler that returned as failed after all (its sends were refused). */
  fail(err: unknown): void {
    this.failed = true;
    this.failure = err;
  }

  committed(): void {
    this.settle(this.onCommit, 'onCommitted');
  }

  discarded(): void {
    this.settle(this.onDiscard, 'onDiscarded');
  }

  /** A hook that throws is the handler's bug: it must not undo a commit nor stop the consumer. */
  private settle(hooks: ReadonlyArray<() => void>, what: string): void {
    if (this.settled) return;
    this.settled = true;
    for (const hook of hooks) {
      try {
        hook();
      } catch (err) {
        const { topic, partition, offset } = this.message;
        this.logger.warn({ topic, partition, offset, err: errorMessage(err) }, `bus ${what} hook failed`);
      }
    }
  }
}
