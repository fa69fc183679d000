import { GovernedMemoryError, type CapabilityClaims, type Delegation, type ResourceRef } from '@gm/contracts';
import { inScope, requireAction } from '@gm/policy';

/*
 * Who may change policy. Until the Cedar PDP decides these (it will replace the bodies of
 * the functions below, not their callers), the rules are:
 * - grants, legal holds, agent revocation: action `admin`; a grant's resource must be in the
 *   capability's scopes (legal holds are per subject, not per resource: `admin` suffices);
 * - delegations: the delegator is always the capability's principal. A capability with
 *   `admin` may delegate any action on resources in its scopes; the principal's *own*
 *   capability (its agent is the principal itself) may delegate at most its own actions on
 *   its own scopes; an agent acting for someone may not delegate further;
 * - capability revocation: action `revoke` in the capability's tenant, or a capability of the
 *   caller's own agent (a caller may always revoke its own capabilities).
 */

export function authorizeAdmin(claims: CapabilityClaims, resources: ResourceRef[] = []): void {
  requireAction(claims, 'admin');
  for (const resource of resources) {
    if (!inScope(claims, resource)) throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'the resource is outside the capability\'s scopes');
  }
}

/** Whether the capability speaks for its principal itself rather than as a delegated agent. */
const actsForItself = (claims: CapabilityClaims): boolean => claims.sub === claims.act.sub;

export function authorizeDelegation(claims: CapabilityClaims, delegation: Pick<Delegation, 'resources' | 'actions'>): void {
  for (const resource of delegation.resources) {
    if (!inScope(claims, resource)) throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'a delegated resource is outside the capability\'s scopes');
  }
  if (claims.actions.includes('admin')) return;
  if (!actsForItself(claims)) {
    throw new GovernedMemoryError('CAP_ACTION_DENIED', 'a delegated agent cannot delegate further; the principal\'s own capability or "admin" is needed');
  }
  if (!delegation.actions.every((a) => claims.actions.includes(a))) {
    throw new GovernedMemoryError('CAP_ACTION_DENIED', 'a principal may delegate only actions its capability grants');
  }
}

/** May this capability revoke that delegation? (the delegator itself, or an admin of all its resources) */
export function mayRevokeDelegation(claims: CapabilityClaims, delegation: Delegation): boolean {
  if (claims.actions.includes('admin')) return delegation.resources.every((r) => inScope(claims, r));
  return actsForItself(claims) && claims.act.sub === delegation.delegatorId;
}

/** A caller may always revoke its own capabilities; others' need `revoke`. */
export function authorizeCapabilityRevocation(claims: CapabilityClaims, own: boolean): void {
  if (!own) requireAction(claims, 'revoke');
}
