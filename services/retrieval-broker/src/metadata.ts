import type { CapabilityClaims, MessageMetadata } from '@gm/contracts';
import { metadataAt } from '@gm/write-edge';
import type { BrokerDeps } from './deps.ts';

/**
 * A command's metadata at the tenant's current policy revision; `request` is what the caller
 * asked (the operation and its path and body), fingerprinted beside an idempotency key.
 */
export async function metadataFor(
  deps: BrokerDeps, claims: CapabilityClaims, subjectId: string, key: string | undefined, request: { operation: string; body: unknown },
): Promise<MessageMetadata> {
  return metadataAt(deps.clock, claims, subjectId, key, await deps.state.policyRevisions.current(claims.tenant), request);
}
