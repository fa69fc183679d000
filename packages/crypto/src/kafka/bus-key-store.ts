import { GovernedMemoryError } from '@gm/contracts';
import { keysTopicSpec, type Bus, type ConsumedMessage } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { z } from 'zod';
import { WrappedKey } from '../keys.ts';
import type { KeyLookup, KeyStore } from '../key-store.ts';
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
  /** Partitions of `memory.keys` when the store creates it (default 1). */
  partitions?: number;
  /** How often the store reads what other instances appended (default 500 ms; 0 = never in the background). */
  pollIntervalMs?: number;
  /** Receives background read failures; the store retries at the next poll. */
  onError?: (err: unknown) => void;
}

/**
 * The key store on the compacted topic `memory.keys`, through the Bus port (Kafka in the
 * distributed runtime; the SQLite bus works too). The whole topic is folded into memory at
 * open and kept current by reading each partition from where the fold stopped.
 */
export async function openBusKeyStore(options: BusKeyStoreOptions): Promise<KeyStore> {
  const store = new BusKeyStore(options);
  await options.bus.ensureTopics([keysTopicSpec(options.partitions ?? 1)]);
  await store.sync();
  store.startPolling(options.pollIntervalMs ?? 500);
  return store;
}

class BusKeyStore implements KeyStore {
  private readonly keys = new Map<string, KeyLookup & { status: 'present' | 'destroyed' }>();
  /** Next offset to read, per partition. */
  private next: number[] = [];
  private syncing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly listeners = new Listeners();

  constructor(private readonly options: BusKeyStoreOptions) {}

  startPolling(intervalMs: number): void {
    if (intervalMs <= 0) return;
    const tick = (): void => {
      this.timer = setTimeout(() => {
        this.sync()
          .catch((err: unknown) => this.options.onError?.(err))
          .finally(() => {
            if (!this.closed) tick();
          });
      }, intervalMs);
      this.timer.unref();
    };
    tick();
  }

  /** Folds every message appended since the last sync. Concurrent calls share one read. */
  sync(): Promise<void> {
    this.syncing ??= this.readNew().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private async readNew(): Promise<void> {
    const { bus } = this.options;
    const ends = await bus.endOffsets(KEYS_TOPIC);
    for (const [partition, end] of ends.entries()) {
      const from = this.next[partition] ?? 0;
      if (end <= from) continue;
      for await (const message of bus.readPartition(KEYS_TOPIC, partition, from)) {
        this.apply(message);
        this.next[partition] = message.offset + 1;
      }
      // Transaction markers take offsets too: nothing below `end` is left to read.
      this.next[partition] = Math.max(this.next[partition] ?? 0, end);
    }
  }

  private apply(message: ConsumedMessage): void {
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
   * log, and the fold applies it again, in log order, when it gets there (the same value changes
   * nothing; a tombstone already before it in the log still wins, for good). Waiting for the fold
   * cost two more round trips per created key on the write path.
   */
  private async append(keyId: string, record: KeyRecord): Promise<void> {
    const [position] = await this.options.bus.produce([{ topic: KEYS_TOPIC, key: keyId, value: record }]);
    if (position === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'bus returned no position for a produced key record');
    this.apply({ ...position, key: keyId, value: record, headers: {}, timestamp: Date.now() });
    // Nothing else was appended in between: the fold has nothing to read back (no reader
    // round trip — each read joins a throwaway consumer group).
    if ((this.next[position.partition] ?? 0) === position.offset) this.next[position.partition] = position.offset + 1;
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

  async get(keyId: string): Promise<KeyLookup> {
    this.ensureOpen();
    // A miss may be a key another instance wrote since the last poll: read up to the end once.
    if (!this.keys.has(keyId)) await this.sync();
    return this.keys.get(keyId) ?? { status: 'missing' };
  }

  async tombstone(keyId: string): Promise<void> {
    this.ensureOpen();
    if (this.keys.get(keyId)?.status === 'destroyed') return;
    await this.append(keyId, { v: 1, destroyed: true });
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
    clearTimeout(this.timer);
    await this.syncing?.catch(() => undefined);
    this.listeners.clear();
  }
}
