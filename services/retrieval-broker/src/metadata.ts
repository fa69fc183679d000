import type { CapabilityClaims, MessageMetadata } from '@gm/contracts';
import { metadataAt } from '@gm/write-edge';
import type { BrokerDeps } from './deps.ts';

/** A command's metadata at the tenant's current policy revision. */
export async function metadataFor(deps: BrokerDeps, claims: CapabilityClaims, subjectId: string, key?: string): Promise<MessageMetadata> {
  return metadataAt(deps.clock, claims, subjectId, key, await deps.state.policyRevisions.current(claims.tenant));
}
