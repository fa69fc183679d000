/**
 * How each operation of the API can fail, for the OpenAPI document: every status it can answer
 * and the stable codes each carries, read from the handlers and what they call (auth.ts,
 * http.ts, consistency.ts, the write edge, write-admission's decider, the gateways) and from
 * the framework around them (edge-errors.ts, the rate limit, shutdown). The statuses come from
 * STATUS_OF, the one mapping the error handler uses, unless the edge answers another on purpose.
 * test/e2e/openapi.e2e.spec.ts holds the running server to it under bad input.
 */
import { LIMITS, type Action, type ErrorCode } from '@gm/contracts';
import { STATUS_OF } from './problem.ts';

/** One way an operation fails: the status and code it answers, and when. */
export interface Failure {
  status: number;
  code: ErrorCode;
  when: string;
}

const fail = (code: ErrorCode, when: string, status = STATUS_OF[code]): Failure => ({ status, code, when });

/** Any request, whatever it asks: the connection (before any route) and a server shutting down. */
export const ANY_REQUEST: readonly Failure[] = [
  fail('MEM_VALIDATION', 'the request is not well-formed HTTP (answered on the connection, before any route)', 400),
  fail('MEM_TIMEOUT', 'the request\'s headers were not received within MEMORY_REQUEST_TIMEOUT (answered on the connection)', 408),
  fail('MEM_PAYLOAD_TOO_LARGE', 'the request line and headers exceed 16 KiB', 431),
  fail('MEM_UNAVAILABLE', 'this server is shutting down (retriable: another instance, or this one restarted, answers)'),
  fail('MEM_TIMEOUT', 'no answer within MEMORY_REQUEST_TIMEOUT of the headers: something it waits for hangs (retriable; a write may still take effect, and a retry with the same Idempotency-Key gets its result)'),
];

export const RATE_LIMITED = fail('MEM_RATE_LIMITED', 'over the rate limit of this capability (or of this address without one), per minute');
export const INTERNAL = fail('MEM_INTERNAL', 'a fault of the server; the detail says nothing more');
export const OUTAGE = fail('MEM_UNAVAILABLE', 'a dependency (the log, the state store, an index) is unavailable (retriable)');

/** Every POST and DELETE: Fastify reads a body whenever one is sent, before the handler runs. */
export const BODY_FRAMING: readonly Failure[] = [
  fail('MEM_VALIDATION', 'a body sent as application/json is not JSON (or is empty)', 400),
  fail('MEM_VALIDATION', 'the body is not valid UTF-8, an object names a key twice, or a key would reach an object prototype: never reinterpreted', 400),
  fail('MEM_VALIDATION', 'the request is malformed (a Content-Length that does not match the body)', 400),
  fail('MEM_PAYLOAD_TOO_LARGE', 'the body is larger than MEMORY_BODY_LIMIT_BYTES'),
  fail('MEM_VALIDATION', 'a body of another media type than application/json, or in another charset than UTF-8', 415),
];

/** Every path with a parameter: the router decodes and bounds it before any route is chosen. */
export const PATH_PARAMETER: readonly Failure[] = [
  fail('MEM_VALIDATION', 'a path segment is not valid percent-encoding', 400),
  fail('MEM_VALIDATION', `a path parameter is longer than any id (${LIMITS.maxIdLength} characters)`, 414),
];

/** A capability, checked: genuine, current, not revoked. */
export const CAPABILITY: readonly Failure[] = [
  fail('CAP_MISSING', 'no `Authorization: Bearer <capability>`'),
  fail('CAP_INVALID', 'not a capability of this deployment: malformed, tampered with, signed by another key, or living longer than 15 minutes'),
  fail('CAP_EXPIRED', 'the capability has expired'),
  fail('CAP_NOT_YET_VALID', 'the capability is not valid yet'),
  fail('CAP_REVOKED', 'the capability, its agent or its delegation was revoked'),
  fail('CAP_KEY_BOUND', 'the capability is bound to a producer key: it is taken on memory.ingest only, with a proof of that key, never as a bearer token'),
];

/** A capability that must grant `action`. */
export const capability = (action: Action | string): readonly Failure[] => [
  ...CAPABILITY,
  fail('CAP_ACTION_DENIED', `the capability does not grant "${action}"`),
];

export const ISSUER = fail('ISSUER_UNAUTHORIZED', 'the issuer credential is missing or wrong (a capability is not one)');
export const BODY_INVALID = fail('MEM_VALIDATION', 'the body breaks the schema: a missing or unknown field, a value out of its bounds (the detail names fields and rules, never values)');
/** The Idempotency-Key header: malformed, or used again for another request. */
export const IDEMPOTENCY: readonly Failure[] = [
  fail('MEM_VALIDATION', `the Idempotency-Key header is not 1–${LIMITS.maxIdLength} letters, digits and . _ : @ -`),
  fail('MEM_IDEMPOTENCY_MISMATCH', 'this Idempotency-Key was used within its window (MEMORY_IDEMPOTENCY_WINDOW) for another request of this agent and subject: nothing is written; send the new request with a new key'),
];
export const TOKEN = fail('MEM_INVALID_CONSISTENCY_TOKEN', 'the Consistency-Token header is malformed, altered, of another deployment or for another tenant (checked before anything is sent)');
export const NOT_YET_AVAILABLE = fail('MEM_NOT_YET_AVAILABLE', 'the job is one the caller may see, but its receipt is not signed yet (retriable: the job is still being carried out and verified)');
export const NOT_YET_CONSISTENT = fail('MEM_NOT_YET_CONSISTENT', 'the projections did not pass the Consistency-Token within MEMORY_READ_YOUR_WRITES_TIMEOUT (retriable)');
export const REPLY_TIMEOUT = fail('MEM_TIMEOUT', 'write-admission did not answer in time; the command may still be decided: a retry with the same Idempotency-Key gets its result, one without a key is a new request (retriable)');
export const POLICY_TIMEOUT = fail('MEM_TIMEOUT', 'the policy projector did not apply the change in time; it is recorded and takes effect once applied, repeating is safe (retriable)');
export const IMPERSONATION = fail('MEM_IMPERSONATION', 'the body names another tenant than the capability');
export const SCOPE = fail('CAP_SCOPE_DENIED', 'the resource is outside the capability\'s scopes');
/** Administration is Cedar's: the principal needs an admin grant that applies (admin-authz.ts). */
export const NOT_ADMIN = fail('CAP_SCOPE_DENIED', 'the principal holds no admin grant that applies here (the resource, the capability\'s purpose, its time bounds); a resource\'s first admin grant is the bootstrap');
export const ID_TAKEN = (what: string) => fail('MEM_ID_TAKEN', `this ${what} id is in use`);
/** A post of a grant that raced an identical one, which was removed again before this answer (design §6.2). */
export const GRANT_RACED = fail('MEM_CONFLICT', 'an identical grant was added by a racing request and removed again before this one was answered: nothing changed; post again');
/** The administration plane keeps every resource's administrators (design §6.2). */
export const LAST_ADMIN = fail('MEM_LAST_ADMIN', 'the last admin grant of the resource (only the tenant\'s administrator removes it) or of the tenant (replaced by configuration, never removed through the API)');
export const notFound = (when: string) => fail('MEM_NOT_FOUND', when);

/** The uniform 404 of a record (design §6.4): malformed, unknown, unauthorised, deleted, expired and quarantined alike. */
export const RECORD_NOT_FOUND = notFound('no record with this id that the capability may act on: never existed, another partition or purpose, deleted, expired, or not an id — all alike');

/** What write-admission decides for a write (packages/domain/src/memory/decide.ts, ttl.ts; services/write-admission). */
export const WRITE_DECISION: readonly Failure[] = [
  fail('MEM_CONFLICT', '`expectedVersion` is not the record\'s current version'),
  fail('MEM_ID_TAKEN', 'the id is not available to this writer: another subject\'s, in a partition it may not write to, or deleted (ids are never reused) — all alike'),
  fail('MEM_FORBIDDEN', 'an update by anyone but the writer (its principal and agent), or one that widens visibility (that needs a reviewed promotion)'),
  fail('MEM_INVALID_TRANSITION', 'the record cannot be updated in its status, its resource cannot change, or the superseded record is not active'),
  fail('MEM_NOT_FOUND', '`supersedesId` names no record of this subject'),
  fail('MEM_SUPERSEDE_MISMATCH', 'a correction must come from the same writer (principal and agent) with the same purposes'),
  fail('MEM_TTL_EXCEEDED', '`expiresAt` is past the longest lifetime of the record\'s kind'),
  fail('MEM_VALIDATION', '`expiresAt` is in the past, the record supersedes itself, an update names `supersedesId`, or the content is a reserved marker'),
];

/** What the edge of a write decides before any command exists (packages/write-edge). */
export const WRITE_EDGE: readonly Failure[] = [
  fail('MEM_IMPERSONATION', 'the body names another tenant, agent or owner than the capability'),
  SCOPE,
  fail('CAP_SCOPE_DENIED', 'the record\'s purposes leave out the capability\'s own purpose'),
  fail('MEM_FORBIDDEN', 'no grant lets this capability write to that partition (resource, visibility, sensitivity)'),
  fail('MEM_ID_TAKEN', 'the id is not available to this writer: another subject\'s, in a partition it may not write to, or deleted — all alike (§5.10)'),
];

/** What write-admission decides for a review (decide.ts: decidePromote, decideReject). */
export const REVIEW_DECISION: readonly Failure[] = [
  fail('MEM_CONFLICT', '`expectedVersion` is not the record\'s current version'),
  fail('MEM_SELF_PROMOTION', 'the writer agent cannot review its own memory'),
  fail('MEM_NOT_FOUND', 'the record was deleted meanwhile'),
];

/** Groups failures by status, in status order; a code listed twice keeps every reason. */
export function byStatus(failures: readonly Failure[]): Map<number, Map<ErrorCode, string[]>> {
  const grouped = new Map<number, Map<ErrorCode, string[]>>();
  for (const { status, code, when } of [...failures].sort((a, b) => a.status - b.status)) {
    const codes = grouped.get(status) ?? new Map<ErrorCode, string[]>();
    const reasons = codes.get(code) ?? [];
    if (!reasons.includes(when)) reasons.push(when);
    codes.set(code, reasons);
    grouped.set(status, codes);
  }
  return grouped;
}
