import type { Action } from './capability.ts';

/**
 * The authorization table (design §9.1): every operation of the API — and the Kafka-native
 * ingest, which admits writes under the same rules — declares here what it needs and what it
 * acts on. The edges enforce exactly this before any handler runs (the retrieval-broker's
 * authorization hook, the ingest-gateway); a handler never decides on its own who may call
 * it. A spec walks the OpenAPI document and fails for an operation that is not declared here,
 * and an undeclared route answers 500 instead of running.
 *
 * `on` names what the policy decision point is asked about, besides the capability's action:
 * - `partitions`: the partitions the PDP opens for the action; the handler acts inside them
 *   only (a write's partition must be one, a search reads only those);
 * - `record`: the record named by the path's `id`; its partition must be open for the action,
 *   and the record live and not tombstoned — otherwise the uniform 404 (§6.4);
 * - `history`: as `record`; and besides, a record a reviewer rejected (its current version is
 *   the rejection, its content gone), where the caller may `review` its partition — those who
 *   could see it in the queue see what became of it;
 * - `subject`: the records of the path's subject the requester may delete — those in
 *   partitions open for `request_delete`, or all of them with `request_delete` on the tenant
 *   (a privacy officer);
 * - `packet`: the evidence packet named by the path, which only the capability that holds it
 *   (its principal, tenant and run) may validate;
 * - `command`: an asynchronous write's outcome, the writing principal's only;
 * - `job`: a deletion job, its requesting principal's, or any with `admin` on the tenant;
 * - `jobs`: the listing of them under the same rule;
 * - `grant`: `admin` on the grant's resource (the body's, or the stored grant's); a resource's
 *   first admin grant is the bootstrap, on the issuer's word (a compare-and-set);
 * - `delegation`: the delegator's own, within its scopes and actions, or `admin` on every
 *   delegated resource;
 * - `capability`: the caller's principal's own capabilities, or `admin` on the tenant;
 * - `tenant`: `admin` on the tenant as a whole (legal holds, agent revocation, ops overview).
 */
export type ResourceOf =
  | 'partitions' | 'record' | 'history' | 'subject' | 'packet' | 'command' | 'job' | 'jobs' | 'grant' | 'delegation' | 'capability' | 'tenant';

export type Guard =
  /** No credential: health, metrics, the documents, the receipt keys, the runtime's proof, the console's static files. */
  | { auth: 'public' }
  /** The issuer credential (only capability issue). */
  | { auth: 'issuer' }
  /** A capability carrying one of `actions`, and the PDP's answer about `on`. */
  | { auth: 'capability'; actions: readonly Action[]; on: ResourceOf };

const cap = <const A extends readonly [Action, ...Action[]]>(actions: A, on: ResourceOf) => ({ auth: 'capability' as const, actions, on });
const PUBLIC = { auth: 'public' } as const;
const ANY_ACTION = ['search', 'read', 'cite', 'write', 'promote', 'review', 'request_delete', 'revoke', 'admin'] as const satisfies readonly Action[];

/** Keyed `METHOD path` with OpenAPI's `{param}` path syntax; `KAFKA memory.ingest` is the ingest-gateway's. */
export const OPERATIONS = {
  'POST /v1/capabilities': { auth: 'issuer' } as const,
  'POST /v1/memories': cap(['write'], 'partitions'),
  'POST /v1/memories:batch': cap(['write'], 'partitions'),
  'KAFKA memory.ingest': cap(['write'], 'partitions'),
  'GET /v1/commands/{commandId}': cap(['write'], 'command'),
  'GET /v1/memories/{id}': cap(['read'], 'record'),
  'GET /v1/memories/{id}/history': cap(['read'], 'history'),
  'POST /v1/memories/{id}/promote': cap(['promote'], 'record'),
  'POST /v1/memories/{id}/reject': cap(['review'], 'record'),
  'DELETE /v1/memories/{id}': cap(['request_delete'], 'record'),
  'GET /v1/review/quarantine': cap(['review'], 'partitions'),
  'POST /v1/search': cap(['search'], 'partitions'),
  'POST /v1/packets/{id}/validate': cap(['cite'], 'packet'),
  'GET /v1/subjects/{subjectId}/summary': cap(['search'], 'partitions'),
  'POST /v1/subjects/{subjectId}/forget': cap(['request_delete'], 'subject'),
  'GET /v1/deletion-jobs': cap(['request_delete', 'admin'], 'jobs'),
  'GET /v1/deletion-jobs/{id}': cap(['request_delete', 'admin'], 'job'),
  'GET /v1/deletion-jobs/{id}/receipt': cap(['request_delete', 'admin'], 'job'),
  'GET /v1/receipt-keys': PUBLIC,
  'GET /v1/runtime-proof': PUBLIC,
  'POST /v1/grants': cap(['admin'], 'grant'),
  'DELETE /v1/grants/{id}': cap(['admin'], 'grant'),
  'POST /v1/delegations': cap(ANY_ACTION, 'delegation'),
  'POST /v1/delegations/{id}/revoke': cap(ANY_ACTION, 'delegation'),
  'POST /v1/capabilities/{jti}/revoke': cap(ANY_ACTION, 'capability'),
  'POST /v1/agents/{id}/revoke': cap(['admin'], 'tenant'),
  'POST /v1/legal-holds': cap(['admin'], 'tenant'),
  'GET /v1/legal-holds': cap(['admin'], 'tenant'),
  'DELETE /v1/legal-holds/{id}': cap(['admin'], 'tenant'),
  'GET /v1/ops/overview': cap(['admin'], 'tenant'),
  'GET /healthz': PUBLIC,
  'GET /readyz': PUBLIC,
  'GET /metrics': PUBLIC,
  'GET /openapi.json': PUBLIC,
  'GET /docs': PUBLIC,
  'GET /docs/{path}': PUBLIC,
  'GET /console': PUBLIC,
  'GET /console/{path}': PUBLIC,
} as const satisfies Record<string, Guard>;

export type OperationKey = keyof typeof OPERATIONS;

/** The declaration of `METHOD path` (OpenAPI path syntax), if there is one. */
export function guardOf(method: string, path: string): Guard | undefined {
  return (OPERATIONS as Record<string, Guard>)[`${method.toUpperCase()} ${path}`];
}
