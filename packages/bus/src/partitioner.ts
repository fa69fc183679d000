/**
 * Key → partition, bit-for-bit the way Kafka's Java client and kafkajs's default
 * (Java-compatible) partitioner do it, so the embedded and the Kafka runtime put a key in the
 * same partition and a topic can move between them without reordering a key's messages.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

const utf8 = new TextEncoder();

/** Kafka's murmur2 over the UTF-8 bytes of `key`, as a signed 32-bit integer. */
export function murmur2(key: string): number {
  const data = utf8.encode(key);
  const length = data.length;
  const byteAt = (i: number): number => data[i] ?? 0;
  // Java int arithmetic: Math.imul for the multiplications, `| 0` to stay in 32 bits.
  let h = (SEED ^ length) | 0;
  const length4 = Math.floor(length / 4);
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = byteAt(i4) | (byteAt(i4 + 1) << 8) | (byteAt(i4 + 2) << 16) | (byteAt(i4 + 3) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  // The last length % 4 bytes (Java's fall-through switch).
  const tail = length & ~3;
  const rest = length % 4;
  if (rest >= 3) h ^= byteAt(tail + 2) << 16;
  if (rest >= 2) h ^= byteAt(tail + 1) << 8;
  if (rest >= 1) {
    h ^= byteAt(tail);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** `(murmur2(key) & 0x7fffffff) % partitions` — Kafka's `toPositive(murmur2(key)) % n`. */
export function partitionForKey(key: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new RangeError(`partitions must be a positive integer, got ${String(partitions)}`);
  }
  return (murmur2(key) & 0x7fffffff) % partitions;
}
