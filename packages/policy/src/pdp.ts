import type { Action, CapabilityClaims, ResourceRef, ScopeRef } from '@gm/contracts';

/**
 * No policy revision in the request: the PDP reads the tenant's current policy itself, so a
 * caller can neither pass a stale one nor pay a store read for nothing.
 */
export interface AuthorizationRequest {
  claims: CapabilityClaims;
  action: Action;
}

/**
 * The policy decision point (§6.2): which partitions may this capability act on? Default
 * deny. The retrieval path searches only what this returns.
 */
export interface PolicyDecisionPoint {
  authorizedPartitions(request: AuthorizationRequest): Promise<string[]>;
  /**
   * May this capability take `action` on its tenant as a whole (§6.2 rule 12)? Only a
   * capability that names its tenant among its scopes, by a grant on the tenant.
   */
  authorizesTenant(request: AuthorizationRequest): Promise<boolean>;
}

/**
 * The write path's question (§5.3): may this capability take `request.action` (e.g. `write`)
 * on this one partition? The same answer as the read path's, so the two cannot drift.
 */
export async function authorizesPartition(pdp: PolicyDecisionPoint, request: AuthorizationRequest, partition: string): Promise<boolean> {
  return (await pdp.authorizedPartitions(request)).includes(partition);
}

const inScope = (claims: CapabilityClaims, resource: ResourceRef | ScopeRef): boolean =>
  claims.scopes.some((s) => s.kind === resource.kind && s.id === resource.id);

export { inScope };
