import { GovernedMemoryError, type ErrorCode, type Problem } from '@gm/contracts';

/** The one place where error codes become HTTP statuses. */
export const STATUS_OF: Record<ErrorCode, number> = {
  MEM_VALIDATION: 422,
  MEM_CONFLICT: 409,
  MEM_NOT_FOUND: 404,
  MEM_FORBIDDEN: 403,
  MEM_IMPERSONATION: 403,
  MEM_SELF_PROMOTION: 403,
  MEM_INVALID_TRANSITION: 409,
  MEM_RETIRED_ID: 409,
  MEM_TTL_EXCEEDED: 422,
  MEM_SUPERSEDE_MISMATCH: 422,
  MEM_ID_TAKEN: 409,
  MEM_LAST_ADMIN: 409,
  MEM_RATE_LIMITED: 429,
  MEM_PAYLOAD_TOO_LARGE: 413,
  MEM_TIMEOUT: 503,
  MEM_UNAVAILABLE: 503,
  MEM_INTERNAL: 500,
  MEM_INVALID_CONSISTENCY_TOKEN: 400,
  MEM_NOT_YET_CONSISTENT: 503,
  // The job exists and the caller may see it: its receipt is the conflict of "not yet", not a 404 or an outage.
  MEM_NOT_YET_AVAILABLE: 409,
  MEM_IDEMPOTENCY_MISMATCH: 422,
  MEM_METHOD_NOT_ALLOWED: 405,
  CAP_MISSING: 401,
  CAP_INVALID: 401,
  CAP_EXPIRED: 401,
  CAP_NOT_YET_VALID: 401,
  CAP_REVOKED: 401,
  CAP_ACTION_DENIED: 403,
  CAP_SCOPE_DENIED: 403,
  CAP_KEY_BOUND: 401,
  // The ingest path's codes (dead-letter reasons, never HTTP answers): mapped like any credential failure.
  CAP_KEY_REQUIRED: 401,
  CAP_PROOF_INVALID: 401,
  CAP_PROOF_STALE: 401,
  CAP_PROOF_REPLAYED: 401,
  ISSUER_UNAUTHORIZED: 401,
  RECEIPT_INVALID: 422,
};

/** The reason phrase of each status the API answers: problem titles and the OpenAPI document's descriptions. */
export const STATUS_TITLES: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout', 409: 'Conflict',
  413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 422: 'Unprocessable Content',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 503: 'Service Unavailable',
};

/** `requestId` is absent only where no request was parsed (a connection error). */
export function problemOf(code: ErrorCode, detail: string, requestId: string | undefined, status = STATUS_OF[code]): Problem {
  return {
    type: `https://governed-memory.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`,
    title: STATUS_TITLES[status] ?? 'Error',
    status,
    code,
    detail,
    ...(requestId === undefined ? {} : { requestId }),
  };
}

/**
 * Everything a reader may not see answers exactly this (§6.4): unauthorised, deleted,
 * expired, quarantined and never-existing are indistinguishable.
 */
export const notFound = (): GovernedMemoryError => new GovernedMemoryError('MEM_NOT_FOUND', 'no such memory');
