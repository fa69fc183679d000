/**
 * `lazyCommitMs` on Kafka (port.ts): a quiet chunk — nothing sent, no hook registered — of a
 * subscription that allows it commits its offset up to `lazyCommitMs` later, with the chunks
 * handled meanwhile, in one group commit per partition. For broadcast followers (every
 * process's key store, the API's replies) an offset commit per message was most of what a
 * message cost them and the broker (docs/sizing.md); their handlers are idempotent, and a crash
 * or refetch before the commit hands the messages over again, as before any commit.
 */
import { errorMessage, type BusLogger } from '../bus-logger.ts';
import type { Mutex } from './kafka-codec.ts';
import { partitionKey } from './kafka-partition-ownership.ts';

interface Held {
  kafkaTopic: string;
  partition: number;
  next: number;
  timer: NodeJS.Timeout;
}

export class LazyCommits {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly lazyCommitMs: number,
    private readonly deps: {
      groupId: string;
      logger: BusLogger;
      /** The partition's lock: a held commit never runs beside the partition's own work. */
      lock(key: string): Mutex;
      /** A plain group commit. */
      commit(kafkaTopic: string, partition: number, next: number): Promise<void>;
    },
  ) {}

  get enabled(): boolean {
    return this.lazyCommitMs > 0;
  }

  /** Commits `next` on the partition within lazyCommitMs, unless a later commit does first. */
  hold(kafkaTopic: string, partition: number, next: number): void {
    const key = partitionKey(kafkaTopic, partition);
    const earlier = this.held.get(key);
    const timer = earlier?.timer ?? setTimeout(() => void this.commitHeld(key), this.lazyCommitMs).unref();
    this.held.set(key, { kafkaTopic, partition, next: Math.max(next, earlier?.next ?? 0), timer });
  }

  /** A commit of the partition landed (or is about to, past everything held): nothing held is left to commit. */
  covered(kafkaTopic: string, partition: number): void {
    const key = partitionKey(kafkaTopic, partition);
    const held = this.held.get(key);
    if (held === undefined) return;
    clearTimeout(held.timer);
    this.held.delete(key);
  }

  /** Commits everything held now (closing). */
  async flush(): Promise<void> {
    await Promise.all([...this.held.keys()].map((key) => this.commitHeld(key)));
  }

  /** Forgets everything held (a new generation: the partitions may be elsewhere, and their messages are handed over again). */
  drop(): void {
    for (const held of this.held.values()) clearTimeout(held.timer);
    this.held.clear();
  }

  private async commitHeld(key: string): Promise<void> {
    await this.deps.lock(key).run(async () => {
      const held = this.held.get(key);
      if (held === undefined) return;
      clearTimeout(held.timer);
      this.held.delete(key);
      try {
        await this.deps.commit(held.kafkaTopic, held.partition, held.next);
      } catch (err) {
        // The next commit of the partition covers these messages; until then a refetch hands them over again.
        this.deps.logger.warn({ groupId: this.deps.groupId, topic: held.kafkaTopic, partition: held.partition, err: errorMessage(err) }, 'bus lazy commit failed');
      }
    });
  }
}
