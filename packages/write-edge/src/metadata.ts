import { createHash } from 'node:crypto';
import { actorFromClaims, type CapabilityClaims, type Clock, type MessageMetadata } from '@gm/contracts';
import { newUlid } from '@gm/ids';

/** JSON with every object's keys sorted: the same request gives the same text whatever order its fields came in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What a request asked, as a hash kept beside its idempotency key: `operation` names the route
 * (a key used for a forget and then for a write is two requests), `request` is what the caller
 * sent, after validation (defaults filled in, so leaving a default out is the same request).
 */
export const requestFingerprint = (operation: string, request: unknown): string =>
  createHash('sha256').update(`${operation}\n${canonical(request)}`, 'utf8').digest('hex');

/**
 * A command's metadata at a known policy revision (a batch reads the revision once). With an
 * idempotency key, `request` is what was asked under it (`requestFingerprint`'s inputs).
 */
export function metadataAt(
  clock: Clock, claims: CapabilityClaims, subjectId: string, key: string | undefined, policyRevision: number,
  request?: { operation: string; body: unknown },
): MessageMetadata {
  return {
    commandId: newUlid(),
    tenantId: claims.tenant,
    subjectId,
    actor: actorFromClaims(claims),
    now: clock.now().toISOString(),
    policyRevision,
    ...(key === undefined ? {} : { idempotencyKey: key }),
    ...(key === undefined || request === undefined ? {} : { requestHash: requestFingerprint(request.operation, request.body) }),
  };
}
