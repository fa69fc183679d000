import { GovernedMemoryError, type ErrorCode } from '@gm/contracts';

/**
 * Why a crypto operation failed, stable like an error code. The shared ERROR_CODES are not
 * extended yet (the HTTP edge maps every code to a status); wiring will promote these.
 */
export type CryptoReason =
  /** The key was tombstoned: what it protected is erased for good. */
  | 'KEY_DESTROYED'
  /** No such key in the store (never written, or not visible yet). */
  | 'KEY_MISSING'
  /** GCM authentication failed: tampered bytes, wrong key, or AAD of another record. */
  | 'AUTH_FAILED'
  /** The configured master keys cannot open the key store (wrong or missing master key). */
  | 'MASTER_KEY_MISMATCH'
  /** MEMORY_MASTER_KEY / MEMORY_MASTER_KEY_FILE is missing or malformed. */
  | 'MASTER_KEY_CONFIG';

const CODE_OF: Record<CryptoReason, ErrorCode> = {
  KEY_DESTROYED: 'MEM_NOT_FOUND',
  KEY_MISSING: 'MEM_NOT_FOUND',
  AUTH_FAILED: 'MEM_INTERNAL',
  MASTER_KEY_MISMATCH: 'MEM_INTERNAL',
  MASTER_KEY_CONFIG: 'MEM_VALIDATION',
};

export class CryptoError extends GovernedMemoryError {
  readonly reason: CryptoReason;

  constructor(reason: CryptoReason, message: string, options: { cause?: unknown } = {}) {
    super(CODE_OF[reason], message, options);
    this.name = 'CryptoError';
    this.reason = reason;
  }
}

export const isCryptoError = (e: unknown, reason?: CryptoReason): e is CryptoError =>
  e instanceof CryptoError && (reason === undefined || e.reason === reason);
