import { GovernedMemoryError } from '@gm/contracts';
import type { ConsumedMessage, OutgoingMessage, SubscribeOptions } from './port.ts';

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
  return { topic: m.topic, key: m.key, value, headers };
}

/** The dead letter of a message: same key and value, its headers plus where and why it failed. */
export function deadLetterOf(message: ConsumedMessage, groupId: string, error: string, attempts: number): OutgoingMessage {
  return {
    topic: `${message.topic}.dlq`,
    key: message.key,
    value: message.value,
    headers: {
      ...message.headers,
      'dlq.topic': message.topic,
      'dlq.partition': String(message.partition),
      'dlq.offset': String(message.offset),
      'dlq.error': error,
      'dlq.attempts': String(attempts),
      'dlq.group': groupId,
    },
  };
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
