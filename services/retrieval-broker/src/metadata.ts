import { actorFromClaims, type CapabilityClaims, type MessageMetadata } from '@gm/contracts';
import { newUlid } from '@gm/ids';
import type { BrokerDeps } from './deps.ts';

/** A command's metadata at a known policy revision (a batch reads the revision once). */
export function metadataAt(deps: BrokerDeps, claims: CapabilityClaims, subjectId: string, key: string | undefined, policyRevision: number): MessageMetadata {
  return {
    commandId: newUlid(),
    tenantId: claims.tenant,
    subjectId,
    actor: actorFromClaims(claims),
    now: deps.clock.now().toISOString(),
    policyRevision,
    ...(key === undefined ? {} : { idempotencyKey: key }),
  };
}

/** A command's metadata at the tenant's current policy revision. */
export async function metadataFor(deps: BrokerDeps, claims: CapabilityClaims, subjectId: string, key?: string): Promise<MessageMetadata> {
  return metadataAt(deps, claims, subjectId, key, await deps.state.policyRevisions.current(claims.tenant));
}
