/**
 * Stable error codes. Only the HTTP edge maps them to statuses; nobody classifies errors by
 * message text.
 */
export const ERROR_CODES = [
  'MEM_VALIDATION',
  'MEM_CONFLICT',
  'MEM_NOT_FOUND',
  'MEM_FORBIDDEN',
  'MEM_IMPERSONATION',
  'MEM_SELF_PROMOTION',
  'MEM_INVALID_TRANSITION',
  'MEM_RETIRED_ID',
  'MEM_TTL_EXCEEDED',
  'MEM_SUPERSEDE_MISMATCH',
  'MEM_ID_TAKEN',
  /** The last administrator's grant of a resource (or the tenant) that this caller may not remove (design §6.2). */
  'MEM_LAST_ADMIN',
  'MEM_RATE_LIMITED',
  'MEM_PAYLOAD_TOO_LARGE',
  'MEM_TIMEOUT',
  'MEM_UNAVAILABLE',
  'MEM_INTERNAL',
  'MEM_INVALID_CONSISTENCY_TOKEN',
  'MEM_NOT_YET_CONSISTENT',
  /** What was asked for exists but is not made yet (a deletion job's receipt before it is signed): retriable, never "no such". */
  'MEM_NOT_YET_AVAILABLE',
  /** An Idempotency-Key used again, within its window, for a different request (IETF Idempotency-Key draft: 422). */
  'MEM_IDEMPOTENCY_MISMATCH',
  /** A method the path does not serve (405, with `Allow` naming the ones it does). */
  'MEM_METHOD_NOT_ALLOWED',
  'CAP_MISSING',
  'CAP_INVALID',
  'CAP_EXPIRED',
  'CAP_NOT_YET_VALID',
  'CAP_REVOKED',
  'CAP_ACTION_DENIED',
  'CAP_SCOPE_DENIED',
  /** A key-bound capability presented as a bearer token (the HTTP API): it is for memory.ingest, with a proof of its key (design §6.1). */
  'CAP_KEY_BOUND',
  /** An unbound capability on memory.ingest where only key-bound ones are taken (docs/ingest.md#producer-proofs). */
  'CAP_KEY_REQUIRED',
  /** A memory.ingest message whose proof of the capability's key is missing, malformed, or signs another key, body, topic, message key or capability. */
  'CAP_PROOF_INVALID',
  /** A proof whose time is outside the gateway's window (MEMORY_INGEST_PROOF_WINDOW_SECONDS). */
  'CAP_PROOF_STALE',
  /** A proof already presented by another message within the window: a copy of a message, not a new request. */
  'CAP_PROOF_REPLAYED',
  'ISSUER_UNAUTHORIZED',
  'RECEIPT_INVALID',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A code that crossed a wire as text (a reply, a stored outcome); one not in the list reads as MEM_INTERNAL. */
export const asErrorCode = (code: string): ErrorCode => ((ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'MEM_INTERNAL');

export class GovernedMemoryError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GovernedMemoryError';
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

export const isGovernedMemoryError = (e: unknown): e is GovernedMemoryError => e instanceof GovernedMemoryError;

/**
 * A dependency (index, state store, broker) is down: retrying later will work, and the
 * message is not at fault. Consumers retry such failures without limit instead of
 * dead-lettering them, so an outage delays work but never drops it.
 */
export const isDependencyOutage = (e: unknown): boolean =>
  isGovernedMemoryError(e) && e.code === 'MEM_UNAVAILABLE' && e.retriable;

/** Back-off for retries: doubling from `baseMs`, capped so an outage is polled, not hammered. */
export const retryDelayMs = (baseMs: number, attempt: number, capMs = 5_000): number =>
  Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
