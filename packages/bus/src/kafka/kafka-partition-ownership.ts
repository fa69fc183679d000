/**
 * What a subscription holds per input partition it owns (kafka-subscription.ts): the lock its
 * work runs in, its transactional producer, and its floor — the group's committed offset, read
 * after fencing every earlier owner and advanced by every commit. A new assignment, a failed
 * batch or a partition taken over releases the floor and the producer, so the next work on the
 * partition fences and reads again.
 */
import type { Producer } from 'kafkajs';
import { Mutex } from './kafka-codec.ts';
import type { TransactionRunner } from './kafka-transactions.ts';

/** The key of one input partition in the per-partition maps. */
export const partitionKey = (kafkaTopic: string, partition: number): string => `${kafkaTopic}\u0000${partition}`;

export interface OwnershipDeps {
  /** The group's Kafka name (namespace included). */
  kafkaGroup: string;
  transactionalIdPrefix: string;
  /** False for a `sends: false` group: no transactional producer, so no fencing by transactional id. */
  sends: boolean;
  transactions: Pick<TransactionRunner, 'connect' | 'fence'>;
  /** The group's committed offset of one partition (0 when none). */
  committedOffset(kafkaGroup: string, kafkaTopic: string, partition: number): Promise<number>;
  /** Told of every commit (the bus announces it to other processes' waits: CommitNotices). */
  onCommitted?(kafkaTopic: string, partition: number, next: number): void;
}

export class PartitionOwnership {
  private readonly producers = new Map<string, Promise<Producer>>();
  private readonly locks = new Map<string, Mutex>();
  private readonly floors = new Map<string, number>();

  constructor(private readonly deps: OwnershipDeps) {}

  /** The work of one partition that must not interleave. */
  lock(key: string): Mutex {
    let lock = this.locks.get(key);
    if (lock === undefined) this.locks.set(key, (lock = new Mutex()));
    return lock;
  }

  /** Resolves once no partition's work runs. */
  async idle(): Promise<void> {
    await Promise.all([...this.locks.values()].map((lock) => lock.idle()));
  }

  /**
   * The partition's floor. The first time since it was (re)assigned or released: fences every
   * earlier owner of the partition, then reads where the group really is.
   */
  async own(key: string, kafkaTopic: string, partition: number): Promise<number> {
    const known = this.floors.get(key);
    if (known !== undefined) return known;
    if (this.deps.sends) await this.deps.transactions.fence(await this.producer(key, kafkaTopic, partition));
    const floor = await this.deps.committedOffset(this.deps.kafkaGroup, kafkaTopic, partition);
    this.floors.set(key, floor);
    return floor;
  }

  /** A commit moved the group to `next` on the partition. */
  committed(kafkaTopic: string, partition: number, next: number): void {
    this.floors.set(partitionKey(kafkaTopic, partition), next);
    this.deps.onCommitted?.(kafkaTopic, partition, next);
  }

  producer(key: string, kafkaTopic: string, partition: number): Promise<Producer> {
    let producer = this.producers.get(key);
    if (producer === undefined) {
      producer = this.deps.transactions.connect(`${this.deps.transactionalIdPrefix}.${this.deps.kafkaGroup}.${kafkaTopic}.${partition}`);
      this.producers.set(key, producer);
      // A failed connect is not cached: the next message tries again.
      producer.catch(() => this.producers.delete(key));
    }
    return producer;
  }

  /** Forgets the floor at once and drops the producer: the next work fences and reads again. */
  async release(key: string): Promise<void> {
    this.floors.delete(key);
    const producer = this.producers.get(key);
    this.producers.delete(key);
    if (producer !== undefined) await producer.then((p) => p.disconnect()).catch(() => undefined);
  }

  /** A new generation: partitions may have been elsewhere meanwhile, so every one is released in turn. */
  releaseAll(): void {
    for (const key of new Set([...this.producers.keys(), ...this.floors.keys()])) void this.lock(key).run(() => this.release(key));
  }

  /** Drops every producer (closing). */
  async close(): Promise<void> {
    await Promise.all([...this.producers.keys()].map((key) => this.release(key)));
  }
}
