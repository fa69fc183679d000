import type { Problem } from '@gm/contracts';

/**
 * Codes whose request may succeed when sent again unchanged: the server was busy, timed out
 * waiting for the pipeline, has not yet folded what a consistency token names, or has not yet
 * made what was asked for (a deletion receipt). Everything else (validation, conflicts,
 * denials, not found) answers the same on every retry.
 */
const RETRIABLE_CODES: ReadonlySet<string> = new Set(['MEM_TIMEOUT', 'MEM_UNAVAILABLE', 'MEM_RATE_LIMITED', 'MEM_NOT_YET_CONSISTENT', 'MEM_NOT_YET_AVAILABLE']);

/** Statuses that say the same about any server or proxy on the way. */
const RETRIABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** A problem+json answer (RFC 9457) of the memory API, typed: branch on `code`, never on `detail`. */
export class MemoryApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly requestId: string | undefined;
  /** Whether sending the same request again may succeed (the client retries these where a retry is safe). */
  readonly retriable: boolean;
  /** The server's `Retry-After`, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(problem: Problem, retryAfterMs?: number) {
    super(`${problem.code}: ${problem.detail}`);
    this.name = 'MemoryApiError';
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.requestId = problem.requestId;
    this.retriable = RETRIABLE_CODES.has(problem.code) || RETRIABLE_STATUSES.has(problem.status);
    this.retryAfterMs = retryAfterMs;
  }
}

/** The request never got an answer (connection refused or reset, DNS, timeout): always retriable. */
export class MemoryNetworkError extends Error {
  readonly retriable = true;
  readonly code = 'NETWORK';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MemoryNetworkError';
  }
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}
