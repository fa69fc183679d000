import { actorFromClaims, type CapabilityClaims, type Clock, type MessageMetadata } from '@gm/contracts';
import { newUlid } from '@gm/ids';

/** A command's metadata at a known policy revision (a batch reads the revision once). */
export function metadataAt(clock: Clock, claims: CapabilityClaims, subjectId: string, key: string | undefined, policyRevision: number): MessageMetadata {
  return {
    commandId: newUlid(),
    tenantId: claims.tenant,
    subjectId,
    actor: actorFromClaims(claims),
    now: clock.now().toISOString(),
    policyRevision,
    ...(key === undefined ? {} : { idempotencyKey: key }),
  };
}
