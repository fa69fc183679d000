import { GovernedMemoryError } from '@gm/contracts';
import { randomUUID } from 'node:crypto';
import { keysTopicSpec, type Bus, type ConsumedMessage, type Subscription } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { z } from 'zod';
import { WrappedKey } from '../keys.ts';
import type { KeyLookup, KeyStore, TombstoneOutcome } from '../key-store.ts';
import { checkPut, Listeners } from '../key-store-shared.ts';

export const KEYS_TOPIC = TOPICS.keys;
export { keysTopicSpec };

/*
 * The Bus port JSON-encodes every value, so `value: null` is the four bytes "null", not a Kafka
 * tombstone (a record with a null value). A destroyed key is therefore an explicit marker
 * record. Compaction keeps only the newest record per key, so once the segments holding the
 * wrapped key are cleaned, the marker is all that is left of it; the marker itself is never
 * removed (a real tombstone would go after delete.retention.ms), which is what keeps the
 * destruction final for every later reader.
 */
const KeyRecord = z.union([
  z.object({ v: z.literal(1), destroyed: z.literal(true) }).strict(),
  z.object({ v: z.literal(1), wrapped: WrappedKey }).strict(),
]);
type KeyRecord = z.infer<typeof KeyRecord>;

export interface BusKeyStoreOptions {
  bus: Bus;
  /** Partitions of `memory.keys`: the deployment's count (an existing topic of another count is refused). */
  partitions: number;
  /** How long a lookup waits for the store to catch up with the topic's end (default 10 s). */
  syncTimeoutMs?: number;
  /** Receives failures of the follower (the bus retries them). */
  onError?: (err: unknown) => void;
}

/**
 * The key store on the compacted topic `memory.keys`, through the Bus port (Kafka in the
 * distributed runtime; the SQLite bus works too). One subscription of a group of its own folds
 * the whole topic from the beginning and then follows it, so a key another instance writes or
 * destroys is seen within a fetch. A lookup of a key something already names (an envelope's
 * data key) that misses first waits for the follower to bring it; any other miss, or one whose
 * key did not come, waits until the fold reached the end offsets read at that moment. (Reading a
 * range per miss instead joined a throwaway consumer group each time: seconds on a fresh broker,
 * on the write path.)
 */
export async function openBusKeyStore(options: BusKeyStoreOptions): Promise<KeyStore> {
  await options.bus.ensureTopics([keysTopicSpec(options.partitions)]);
  const store = new BusKeyStore(options);
  await store.follow();
  await store.sync();
  return store;
}

/**
 * How long a lookup of a named key (KeyStore.get) that misses waits for the follower to bring it before it reads
 * the topic's end offsets and waits for the fold to reach them. A data key is in the log before
 * any event sealed with it (write-admission awaits the put), so the follower's next fetch brings
 * it; reading the end offsets on every miss cost a request per new record in every process
 * that opens events (docs/sizing.md). A key that never comes (there is none) costs this much
 * more before it answers `missing`.
 */
const KEY_ARRIVAL_WAIT_MS = 250;

/** How late the follower's offsets may be committed: a restart re-reads the topic from the start anyway. */
const FOLLOWER_LAZY_COMMIT_MS = 1_000;

interface CatchUp {
  ends: number[];
  resolve: () => void;
}

interface QueuedAppend {
  keyId: string;
  record: KeyRecord;
  resolve: () => void;
  reject: (err: unknown) => void;
}

class BusKeyStore implements KeyStore {
  private readonly keys = new Map<string, KeyLookup & { status: 'present' | 'destroyed' }>();
  /** Next offset to fold, per partition. */
  private next: number[] = [];
  private readonly waiting = new Set<CatchUp>();
  private subscription: Subscription | undefined;
  private closed = false;
  private readonly listeners = new Listeners();
  /** The catch-up the misses of this turn of the event loop share (see `get`). */
  private sharedSync: Promise<void> | undefined;
  /** Records to append with the next produce (see `append`). */
  private queued: QueuedAppend[] = [];
  /** Lookups waiting for the follower to fold their key id (see `get`). */
  private readonly arrivals = new Map<string, Set<() => void>>();

  constructor(private readonly options: BusKeyStoreOptions) {}

  async follow(): Promise<void> {
    this.subscription = await this.options.bus.subscribe({
      // A group per store instance: every instance folds the whole topic for itself.
      groupId: `gm-keys.${randomUUID()}`,
      topics: [KEYS_TOPIC],
      fromBeginning: true,
      // Nobody continues this group: it is deleted when the store closes, and it never sends.
      transient: true,
      sends: false,
      // Nobody reads its offsets either (a lookup waits for the fold, not for a commit): one group
      // commit a second instead of one per key, in every process that holds keys.
      lazyCommitMs: FOLLOWER_LAZY_COMMIT_MS,
      handler: async (message) => {
        try {
          this.apply(message);
        } finally {
          this.next[message.partition] = Math.max(this.next[message.partition] ?? 0, message.offset + 1);
          this.wake();
        }
      },
    });
  }

  private caughtUp(ends: number[]): boolean {
    return ends.every((end, partition) => (this.next[partition] ?? 0) >= end);
  }

  private wake(): void {
    for (const waiter of this.waiting) {
      if (!this.caughtUp(waiter.ends)) continue;
      this.waiting.delete(waiter);
      waiter.resolve();
    }
  }

  /** Resolves once the fold reached the end offsets of the topic as read now. */
  async sync(): Promise<void> {
    const ends = await this.options.bus.endOffsets(KEYS_TOPIC);
    if (this.caughtUp(ends)) return;
    const timeoutMs = this.options.syncTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    let waiter: CatchUp | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        waiter = { ends, resolve };
        this.waiting.add(waiter);
        timer = setTimeout(() => reject(new GovernedMemoryError('MEM_UNAVAILABLE', `the key store did not catch up with ${KEYS_TOPIC} in ${timeoutMs} ms`, { retriable: true })), timeoutMs);
      });
    } finally {
      clearTimeout(timer);
      if (waiter) this.waiting.delete(waiter);
    }
  }

  private apply(message: ConsumedMessage): void {
    this.fold(message);
    const waiting = this.arrivals.get(message.key);
    if (waiting === undefined) return;
    this.arrivals.delete(message.key);
    for (const arrived of waiting) arrived();
  }

  private fold(message: ConsumedMessage): void {
    const parsed = KeyRecord.safeParse(message.value);
    // Destroyed is final: a put that raced a tombstone and landed after it changes nothing.
    if (this.keys.get(message.key)?.status === 'destroyed') return;
    if (!parsed.success || 'destroyed' in parsed.data) {
      // An unreadable record under a key id is treated as destroyed, never as an older value.
      this.keys.set(message.key, { status: 'destroyed' });
      this.listeners.emit(message.key);
      return;
    }
    this.keys.set(message.key, { status: 'present', wrapped: parsed.data.wrapped });
  }

  private ensureOpen(): void {
    if (this.closed) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'key store is closed');
  }

  /**
   * Appends a record and applies it here at once: once the produce is acknowledged it is in the
   * log, and the follower applies it again, in log order, when it gets there (the same value
   * changes nothing; a tombstone already before it in the log still wins, for good). Waiting for
   * the follower would add a fetch per created key on the write path.
   *
   * The appends asked for in one turn of the event loop go out together, one produce per
   * partition of memory.keys: write-admission seals a batch's events together, so the data keys
   * of all its new records are created in one round trip, not one each.
   */
  private append(keyId: string, record: KeyRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push({ keyId, record, resolve, reject });
      if (this.queued.length === 1) setImmediate(() => void this.appendQueued());
    });
  }

  private async appendQueued(): Promise<void> {
    const queued = this.queued;
    this.queued = [];
    // One produce per partition, in parallel: a produce spanning partitions is a transaction on
    // Kafka, whose commit marker takes an offset no consumer ever sees, so a lookup's catch-up
    // to the end offsets would wait for a record that never comes.
    const byPartition = new Map<number, QueuedAppend[]>();
    try {
      for (const q of queued) {
        const partition = this.options.bus.partitionFor(KEYS_TOPIC, q.keyId);
        const group = byPartition.get(partition);
        if (group === undefined) byPartition.set(partition, [q]);
        else group.push(q);
      }
    } catch (err) {
      // Every caller hears of it; none is left waiting.
      for (const { reject } of queued) reject(err);
      return;
    }
    await Promise.all([...byPartition.values()].map((group) => this.appendGroup(group)));
  }

  private async appendGroup(group: QueuedAppend[]): Promise<void> {
    try {
      const positions = await this.options.bus.produce(group.map(({ keyId, record }) => ({ topic: KEYS_TOPIC, key: keyId, value: record })));
      if (positions.length !== group.length) throw new GovernedMemoryError('MEM_INTERNAL', 'bus returned no position for a produced key record');
      group.forEach(({ keyId, record }, i) => {
        const position = positions[i];
        if (position === undefined) return;
        this.apply({ ...position, key: keyId, value: record, headers: {}, timestamp: Date.now() });
        // Nothing else was appended in between: a lookup need not wait for the follower to fetch it back.
        if ((this.next[position.partition] ?? 0) === position.offset) this.next[position.partition] = position.offset + 1;
      });
    } catch (err) {
      for (const { reject } of group) reject(err);
      return;
    }
    for (const { resolve } of group) resolve();
  }

  async put(keyId: string, wrapped: WrappedKey): Promise<void> {
    this.ensureOpen();
    const checked = checkPut(keyId, wrapped);
    // No read before the put: every caller has just looked the id up (a miss reads to the end).
    if (this.keys.get(keyId)?.status === 'destroyed') {
      throw new GovernedMemoryError('MEM_CONFLICT', `key ${keyId} was destroyed and cannot be written again`);
    }
    await this.append(keyId, { v: 1, wrapped: checked });
    // A tombstone from another instance that landed first wins; the caller must not use the key.
    if (this.keys.get(keyId)?.status === 'destroyed') {
      throw new GovernedMemoryError('MEM_CONFLICT', `key ${keyId} was destroyed while it was being written`);
    }
  }

  async get(keyId: string, options: { named?: boolean } = {}): Promise<KeyLookup> {
    this.ensureOpen();
    // A miss may be a key another instance wrote that the follower has not folded yet: catch up
    // once. The misses of one turn of the event loop (a batch's new records) share that catch-up;
    // its end offsets are read after all of them, so none misses a key written before it asked.
    if (!this.keys.has(keyId) && options.named === true) await this.arrival(keyId);
    if (!this.keys.has(keyId)) {
      this.sharedSync ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.sharedSync = undefined;
        return this.sync();
      });
      await this.sharedSync;
    }
    return this.keys.get(keyId) ?? { status: 'missing' };
  }

  /** Resolves once the follower folded `keyId`, or after KEY_ARRIVAL_WAIT_MS. */
  private arrival(keyId: string): Promise<void> {
    return new Promise((resolve) => {
      let waiting = this.arrivals.get(keyId);
      if (waiting === undefined) this.arrivals.set(keyId, (waiting = new Set()));
      const mine = waiting;
      const timer = setTimeout(() => {
        mine.delete(arrived);
        if (mine.size === 0 && this.arrivals.get(keyId) === mine) this.arrivals.delete(keyId);
        resolve();
      }, KEY_ARRIVAL_WAIT_MS);
      const arrived = (): void => {
        clearTimeout(timer);
        resolve();
      };
      mine.add(arrived);
    });
  }

  async tombstone(keyId: string): Promise<TombstoneOutcome> {
    this.ensureOpen();
    // The record that held the key stays in the log until compaction passes it (keysTopicSpec).
    if (this.keys.get(keyId)?.status !== 'destroyed') await this.append(keyId, { v: 1, destroyed: true });
    return { residue: 'until_compaction' };
  }

  async all(): Promise<WrappedKey[]> {
    this.ensureOpen();
    await this.sync();
    const out: WrappedKey[] = [];
    for (const entry of this.keys.values()) if (entry.status === 'present') out.push(entry.wrapped);
    return out.sort((a, b) => (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0));
  }

  onDestroyed(listener: (keyId: string) => void): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.subscription?.close();
    this.listeners.clear();
  }
}
