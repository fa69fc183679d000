/**
 * Commits the results of one partition's handled messages a chunk at a time, in handling
 * order: the sends of every message of a chunk and the offset past its last one go in one
 * transaction (a plain group commit when nothing was sent). One transaction per message cost
 * five broker round trips and a visibility poll per message; per chunk they are shared.
 *
 * A chunk closes when it is full (messages or bytes — a record batch must stay under the
 * broker's message.max.bytes), when it is older than `maxAgeMs` (so results never wait
 * behind a slow handler, and heartbeats keep flowing), or when the caller drains. While one
 * chunk commits the next fills; commits run one at a time (one transactional producer).
 *
 * After a failed commit nothing later is committed: every chunk from the failed one on is
 * discarded (its hooks told), so the partition's results stay a prefix of its messages.
 */
import type { HandlerAttempt } from '../handler-attempt.ts';
import { encodedBytes, isFenced, type EncodedMessage } from './kafka-codec.ts';

export interface ChunkEntry {
  /** What lands in the transaction for this message (the handler's sends, or a dead letter). */
  queued: readonly EncodedMessage[];
  /** The handler attempt whose hooks learn the outcome; none for a dead letter. */
  attempt?: HandlerAttempt<EncodedMessage>;
  /** The offset to commit after this message (past trailing transaction markers for the last one). */
  next: number;
}

export interface Chunk {
  entries: ChunkEntry[];
  bytes: number;
}

export interface ChunkLimits {
  maxMessages: number;
  maxBytes: number;
  maxAgeMs: number;
}

/** A failed commit: 'lost' when another member fenced us, else the broker error to rethrow. */
export type ChunkFailure = { lost: true } | { lost: false; error: unknown };

export class ChunkCommitter {
  private open: Chunk | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The chain of commits: each starts when the previous one settled. */
  private tail: Promise<void> = Promise.resolve();
  private failure: ChunkFailure | undefined;

  constructor(
    private readonly limits: ChunkLimits,
    /** Commits a chunk; throws when it was not committed (aborted, fenced, broker down). */
    private readonly commit: (chunk: Chunk) => Promise<void>,
    /** Runs after a chunk committed and before its hooks. */
    private readonly committed: (chunk: Chunk) => void,
  ) {}

  /** True once a commit failed: handling more messages of this batch would be wasted. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  add(entry: ChunkEntry): void {
    if (this.failure !== undefined) {
      entry.attempt?.discarded();
      return;
    }
    const bytes = encodedBytes(entry.queued);
    if (this.open !== undefined && this.open.bytes + bytes > this.limits.maxBytes) this.close();
    if (this.open === undefined) {
      this.open = { entries: [], bytes: 0 };
      this.timer = setTimeout(() => this.close(), this.limits.maxAgeMs);
    }
    this.open.entries.push(entry);
    this.open.bytes += bytes;
    if (this.open.entries.length >= this.limits.maxMessages) this.close();
  }

  /** Commits everything added so far; resolves with the first failure, if any. */
  async drain(): Promise<ChunkFailure | undefined> {
    this.close();
    await this.tail;
    return this.failure;
  }

  private close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const chunk = this.open;
    this.open = undefined;
    if (chunk !== undefined) this.tail = this.tail.then(() => this.flush(chunk));
  }

  private async flush(chunk: Chunk): Promise<void> {
    if (this.failure === undefined) {
      try {
        await this.commit(chunk);
        this.committed(chunk);
        for (const entry of chunk.entries) entry.attempt?.committed();
        return;
      } catch (err) {
        this.failure = isFenced(err) ? { lost: true } : { lost: false, error: err };
      }
    }
    for (const entry of chunk.entries) entry.attempt?.discarded();
  }
}
