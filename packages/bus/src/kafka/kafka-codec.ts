/**
 * What travels between the port's messages and Kafka records: JSON values, string headers,
 * UTF-8 keys, and the namespace (topic prefix) that maps port names onto a shared cluster.
 */
import { GovernedMemoryError, readStrictJson } from '@gm/contracts';
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import { errorMessage } from '../bus-logger.ts';
import type { ConsumedMessage } from '../port.ts';

import { messageBytes, type EncodedMessage } from '../messages.ts';
// Messages are validated and encoded before anything is sent, so a bad batch sends nothing.
export { encodeMessage, type EncodedMessage } from '../messages.ts';

/**
 * What messages weigh in a record batch, near enough to keep one under the broker's size limit.
 * Headers count: a platform's memory.ingest message carries its capability in one, and a dead
 * letter carries the original's headers and its own. In UTF-8 bytes, as the broker counts: 300,000
 * characters of non-ASCII text are up to 1.2 MB.
 */
export const encodedBytes = (messages: readonly EncodedMessage[]): number => messages.reduce((sum, m) => sum + messageBytes(m), 0);

export const toRecord = (m: EncodedMessage, partition: number): Message => ({ key: m.key, value: m.value, headers: m.headers, partition });

export function decodeMessage(topic: string, partition: number, record: KafkaMessage): ConsumedMessage {
  return {
    topic,
    partition,
    offset: Number(record.offset),
    key: record.key?.toString('utf8') ?? '',
    value: decodeValue(record.value),
    headers: decodeHeaders(record.headers),
    timestamp: Number(record.timestamp),
  };
}

/**
 * Our producers only write JSON. A record that is not JSON read exactly as sent (a foreign
 * producer's text, invalid UTF-8, a lone surrogate, a key named twice: readStrictJson) is handed
 * over as a string, so the handler's schema check rejects (and dead-letters) it instead of the
 * consumer crashing on it or reading something else than was sent; a null value (a compaction
 * tombstone) stays null.
 */
function decodeValue(value: Buffer | null): unknown {
  if (value === null) return null;
  const read = readStrictJson(value);
  return 'value' in read ? read.value : value.toString('utf8');
}

function decodeHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers ?? {})) {
    // Kafka allows repeated header names; the port has one value per name: the first wins.
    const first = Array.isArray(raw) ? raw[0] : raw;
    if (first !== undefined) out[name] = typeof first === 'string' ? first : first.toString('utf8');
  }
  return out;
}

/** Port names ⇄ Kafka names: one prefix for topics and consumer groups of a deployment. */
export class Namespace {
  constructor(readonly prefix: string) {}

  topic(name: string): string {
    return this.prefix + name;
  }

  group(groupId: string): string {
    return this.prefix + groupId;
  }

  /** The port's name of a Kafka topic of this namespace. */
  portTopic(kafkaTopic: string): string {
    return kafkaTopic.startsWith(this.prefix) ? kafkaTopic.slice(this.prefix.length) : kafkaTopic;
  }
}

export const unknownTopic = (topic: string): GovernedMemoryError =>
  new GovernedMemoryError('MEM_VALIDATION', `unknown topic "${topic}" (create it with ensureTopics first)`);

/** Kafka failures reach callers as one retriable code; the kafkajs error stays the cause. */
export function unavailable(what: string, err: unknown): GovernedMemoryError {
  if (err instanceof GovernedMemoryError) return err;
  return new GovernedMemoryError('MEM_UNAVAILABLE', `kafka: ${what} failed: ${errorMessage(err)}`, { retriable: true, cause: err });
}

/**
 * True when a newer owner of the same transactional id fenced this producer. The request
 * versions kafkajs speaks get PRODUCER_FENCED reported as INVALID_PRODUCER_EPOCH (47).
 */
export function isFenced(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if ((e as Error & { type?: unknown }).type === 'INVALID_PRODUCER_EPOCH') return true;
  }
  return false;
}

/**
 * Why the broker refused the records themselves (their size, their format), if it did: the same
 * records are refused however often they are sent, unlike an outage, which passes.
 */
export function recordRefusal(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const type = (e as Error & { type?: unknown }).type;
    if (typeof type === 'string' && RECORD_REFUSALS.has(type)) return type;
  }
  return undefined;
}

const RECORD_REFUSALS: ReadonlySet<string> = new Set([
  'MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TIMESTAMP',
]);

/** Serialises async critical sections (one open transaction per transactional producer). */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const result = this.tail.then(section);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Resolves once everything queued so far has settled. */
  idle(): Promise<void> {
    return this.tail;
  }
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Retries `attempt` while its failure is retriable and `withinMs` has not passed, waiting
 * doubling from `firstWaitMs` up to 1 s: for what a coordinator or a transaction's markers take
 * to settle after a broker moved, which is longer than kafkajs's own retries wait.
 */
export async function retryWithin<T>(withinMs: number, attempt: () => Promise<T>, firstWaitMs = 50): Promise<T> {
  const deadline = performance.now() + withinMs;
  for (let wait = firstWaitMs; ; wait = Math.min(wait * 2, 1_000)) {
    try {
      return await attempt();
    } catch (err) {
      if ((err as { retriable?: unknown }).retriable !== true || performance.now() > deadline) throw err;
      await delay(wait);
    }
  }
}

/**
 * Retries a metadata read while kafkajs says the failure is retriable (a leader moving, a
 * topic just created, stale metadata): a few attempts, doubling from 100 ms.
 */
export async function withMetadataRetry<T>(read: () => Promise<T>, attempts = 6): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await read();
    } catch (err) {
      const retriable = (err as { retriable?: unknown }).retriable === true;
      if (!retriable || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** (attempt - 1)));
    }
  }
}
