import { GovernedMemoryError, INGEST_CAPABILITY_HEADER } from '@gm/contracts';
import type { ConsumedMessage, OutgoingMessage, SubscribeOptions } from './port.ts';

/**
 * The most one message may weigh (key, value and headers, in UTF-8 bytes): Kafka refuses a
 * record batch over the broker's 1 MiB `message.max.bytes`, and a record needs room for its
 * batch's own overhead. Both adapters refuse a bigger message when it is sent (MEM_VALIDATION),
 * so a handler's oversized send fails its attempt — retried, then dead-lettered — instead of a
 * commit the broker refuses again on every retry.
 */
export const MAX_MESSAGE_BYTES = 1_000_000;

/** An outgoing message checked and JSON-encoded once, as both adapters store it. */
export interface EncodedMessage {
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** Validates and encodes at send time, so a bad value fails the sender, never the commit. */
export function encodeMessage(m: OutgoingMessage, index = 0): EncodedMessage {
  if (typeof m.topic !== 'string' || typeof m.key !== 'string') {
    throw new GovernedMemoryError('MEM_VALIDATION', `message ${index}: topic and key must be strings`);
  }
  const invalid = (why: string, cause?: unknown): GovernedMemoryError =>
    new GovernedMemoryError('MEM_VALIDATION', `message ${index} for topic "${m.topic}": ${why}`, { cause });
  let value: string | undefined;
  try {
    value = JSON.stringify(m.value);
  } catch (cause) {
    throw invalid('value is not JSON-serialisable', cause);
  }
  if (value === undefined) throw invalid('value is not JSON-serialisable');
  const headers: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(m.headers ?? {})) {
    if (typeof headerValue !== 'string') throw invalid(`header "${name}" is not a string`);
    headers[name] = headerValue;
  }
  const encoded = { topic: m.topic, key: m.key, value, headers };
  const bytes = messageBytes(encoded);
  if (bytes > MAX_MESSAGE_BYTES) throw invalid(`${bytes} bytes encoded, over the limit of ${MAX_MESSAGE_BYTES} for one message`);
  return encoded;
}

/** What an encoded message weighs on the wire: key, value and headers in UTF-8 bytes. */
export function messageBytes(m: Pick<EncodedMessage, 'key' | 'value' | 'headers'>): number {
  let bytes = Buffer.byteLength(m.key) + Buffer.byteLength(m.value);
  for (const [name, value] of Object.entries(m.headers)) bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
  return bytes;
}

/**
 * Bounds of a dead letter, far below MAX_MESSAGE_BYTES together: a dead letter must always be
 * writable, whatever the poison message held. A value whose JSON is up to DEAD_LETTER_VALUE_BYTES
 * is kept as it is (it can be replayed); a bigger one — 300 KB of control characters is 1.8 MB of
 * JSON escapes — is replaced by an excerpt of its start, and the headers say so.
 */
export const DEAD_LETTER_VALUE_BYTES = 256 * 1024;
const EXCERPT_BYTES = 16 * 1024;
/** An original header longer than this is not copied (a dead letter names how many were left out). */
const DEAD_LETTER_HEADER_BYTES = 4 * 1024;
const DEAD_LETTER_HEADERS_BYTES = 16 * 1024;
const DEAD_LETTER_ERROR_CHARS = 1024;
const DEAD_LETTER_KEY_CHARS = 1024;
/**
 * Headers that hold a credential (a memory.ingest message's capability): never copied to a dead
 * letter, which every reader of `<topic>.dlq` sees (docs/ingest.md, docs/security.md).
 */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([INGEST_CAPABILITY_HEADER]);

/**
 * The dead letter of a message: its key, its value (or an excerpt, see DEAD_LETTER_VALUE_BYTES),
 * its headers but credentials, plus where and why it failed — always under MAX_MESSAGE_BYTES.
 * `copyHeaders: false` copies none of the original's headers.
 */
export function deadLetterOf(
  message: ConsumedMessage, groupId: string, error: string, attempts: number, { copyHeaders = true }: { copyHeaders?: boolean } = {},
): OutgoingMessage {
  const headers: Record<string, string> = {};
  let headerBytes = 0;
  let dropped = 0;
  for (const [name, value] of Object.entries(copyHeaders ? message.headers : {})) {
    if (CREDENTIAL_HEADERS.has(name) || name.startsWith('dlq.')) continue;
    const bytes = Buffer.byteLength(name) + Buffer.byteLength(value);
    if (bytes > DEAD_LETTER_HEADER_BYTES || headerBytes + bytes > DEAD_LETTER_HEADERS_BYTES) {
      dropped += 1;
      continue;
    }
    headers[name] = value;
    headerBytes += bytes;
  }
  const { value, excerpt } = boundedValue(message.value);
  return {
    topic: `${message.topic}.dlq`,
    key: message.key.length > DEAD_LETTER_KEY_CHARS ? message.key.slice(0, DEAD_LETTER_KEY_CHARS) : message.key,
    value,
    headers: {
      ...headers,
      'dlq.topic': message.topic,
      'dlq.partition': String(message.partition),
      'dlq.offset': String(message.offset),
      'dlq.error': error.length > DEAD_LETTER_ERROR_CHARS ? `${error.slice(0, DEAD_LETTER_ERROR_CHARS)}…` : error,
      'dlq.attempts': String(attempts),
      'dlq.group': groupId,
      ...(excerpt === undefined ? {} : { 'dlq.excerpt': 'true', 'dlq.value-length': String(excerpt.length) }),
      ...(dropped > 0 ? { 'dlq.headers-dropped': String(dropped) } : {}),
      ...(message.key.length > DEAD_LETTER_KEY_CHARS ? { 'dlq.key-length': String(message.key.length) } : {}),
    },
  };
}

/**
 * The value itself when its JSON fits DEAD_LETTER_VALUE_BYTES; else the start of its text (the
 * string itself, or its JSON) cut to EXCERPT_BYTES of JSON, with the text's full length.
 */
function boundedValue(value: unknown): { value: unknown; excerpt?: { length: number } } {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text !== undefined && Buffer.byteLength(text) <= DEAD_LETTER_VALUE_BYTES) return { value };
  const whole = typeof value === 'string' ? value : (text ?? '');
  let cut = whole.slice(0, EXCERPT_BYTES);
  // Escapes make JSON up to six bytes a character: halved until the excerpt's JSON fits.
  while (Buffer.byteLength(JSON.stringify(cut)) > EXCERPT_BYTES) cut = cut.slice(0, Math.floor(cut.length / 2));
  return { value: cut.isWellFormed() ? cut : cut.toWellFormed(), excerpt: { length: whole.length } };
}

/** Messages of one batch handler call by default, and at most (SubscriptionSettings.maxBatchMessages). */
export const DEFAULT_BATCH_MESSAGES = 256;
export const MAX_BATCH_MESSAGES = 8192;

export function validateSubscribeOptions(options: SubscribeOptions): void {
  const invalid = (why: string): GovernedMemoryError => new GovernedMemoryError('MEM_VALIDATION', `subscribe: ${why}`);
  if (options.groupId.length === 0) throw invalid('groupId must not be empty');
  if (options.topics.length === 0) throw invalid('topics must not be empty');
  // The type says exactly one; untyped callers get a clear error instead of a silent pick.
  const handlers = [options.handler, options.batchHandler].filter((h) => typeof h === 'function').length;
  if (handlers !== 1) throw invalid('exactly one of handler and batchHandler must be given');
  const { maxAttempts, retryBackoffMs, lingerMs, lazyCommitMs, maxBatchMessages, lingerShare, sends, transient } = options;
  // A transient group's per-partition transactional ids would outlive it (Kafka cannot delete them).
  if (transient === true && sends !== false) throw invalid('a transient group must be subscribed with sends: false');
  if (lingerShare !== undefined && (!Number.isFinite(lingerShare) || lingerShare <= 0 || lingerShare > 1)) throw invalid('lingerShare must be a number in (0, 1]');
  if (maxBatchMessages !== undefined && (!Number.isInteger(maxBatchMessages) || maxBatchMessages < 1 || maxBatchMessages > MAX_BATCH_MESSAGES)) {
    throw invalid(`maxBatchMessages must be an integer from 1 to ${MAX_BATCH_MESSAGES}`);
  }
  if (lingerMs !== undefined && (!Number.isFinite(lingerMs) || lingerMs < 0)) throw invalid('lingerMs must be a non-negative number');
  if (lazyCommitMs !== undefined && (!Number.isFinite(lazyCommitMs) || lazyCommitMs < 0)) throw invalid('lazyCommitMs must be a non-negative number');
  if (maxAttempts !== undefined && (!Number.isInteger(maxAttempts) || maxAttempts < 1)) throw invalid('maxAttempts must be a positive integer');
  if (retryBackoffMs !== undefined && (!Number.isFinite(retryBackoffMs) || retryBackoffMs < 0)) {
    throw invalid('retryBackoffMs must be a non-negative number');
  }
}
