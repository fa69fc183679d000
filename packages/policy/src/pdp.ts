import type { Action, CapabilityClaims, ResourceRef } from '@gm/contracts';
import { partitionKey } from '@gm/domain';

export interface AuthorizationRequest {
  claims: CapabilityClaims;
  action: Action;
  policyRevision: number;
}

/**
 * The policy decision point (§6.2): which partitions may this capability act on? Default
 * deny. The retrieval path searches only what this returns.
 */
export interface PolicyDecisionPoint {
  authorizedPartitions(request: AuthorizationRequest): Promise<string[]>;
}

/**
 * The write path's question (§5.3): may this capability take `request.action` (e.g. `write`)
 * on this one partition? The same answer as the read path's, so the two cannot drift.
 */
export async function authorizesPartition(pdp: PolicyDecisionPoint, request: AuthorizationRequest, partition: string): Promise<boolean> {
  return (await pdp.authorizedPartitions(request)).includes(partition);
}

const inScope = (claims: CapabilityClaims, resource: ResourceRef): boolean =>
  claims.scopes.some((s) => s.kind === resource.kind && s.id === resource.id);

/**
 * The walking-skeleton PDP: a capability reaches the `team` partition of each resource in
 * its scopes and the `private` partitions its delegated principal owns there. Restricted
 * partitions need explicit grants, which arrive with the Cedar PDP — until then, none.
 */
export class ScopePolicyDecisionPoint implements PolicyDecisionPoint {
  async authorizedPartitions({ claims, action }: AuthorizationRequest): Promise<string[]> {
    if (!claims.actions.includes(action)) return [];
    const partitions = claims.scopes.flatMap((resource) => [
      partitionKey({ tenantId: claims.tenant, resource, visibility: 'team', sensitivity: 'normal', ownerPrincipalId: claims.act.sub }),
      partitionKey({ tenantId: claims.tenant, resource, visibility: 'private', sensitivity: 'normal', ownerPrincipalId: claims.act.sub }),
    ]);
    return [...new Set(partitions)].sort();
  }
}

export { inScope };
