import { GovernedMemoryError, isTenantRef, type CapabilityClaims, type Delegation, type Grant, type ResourceRef, type ScopeRef } from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import type { Logger } from '@gm/observability';
import { inScope, requireAction, type PolicyDecisionPoint } from '@gm/policy';
import type { StateStore } from '@gm/state-store';
import type { BrokerConfig, BrokerDeps } from './deps.ts';
import type { PolicyGateway } from './policy-gateway.ts';

/*
 * Who may change policy (design §6.2, rules 7 and 12). Administration is decided by the Cedar
 * PDP like every other action: the capability must carry `admin` (and the resource must be in
 * its scopes), and its principal must hold an `admin` grant that the policy set lets it use for
 * this purpose, now. The one exception is the bootstrap: a resource (or the tenant) that never
 * had an admin grant may get its first one on the issuer's word (an `admin` capability scoped to
 * it, which only the issuer credential mints) — otherwise nobody could ever start. The bootstrap
 * is a compare-and-set: of two concurrent first grants one wins. From then on, Cedar decides.
 * - grants: admin on the grant's resource (a grant on the tenant: admin on the tenant);
 * - legal holds, agent revocation, another principal's capability, every deletion job of the
 *   tenant, the ops overview: admin on the tenant (`{kind: 'tenant'}`, rule 12);
 * - delegations: the delegator is always the capability's principal. A capability with
 *   `admin` may delegate any action on resources in its scopes; the principal's *own*
 *   capability (its agent is the principal itself) may delegate at most its own actions on
 *   its own scopes; an agent acting for someone may not delegate further.
 */

export interface AdminDeps {
  pdp: PolicyDecisionPoint;
  /** The tenant's grants as the policy projector holds them (for the bootstrap). */
  grants(tenant: string): Promise<Grant[]>;
  /**
   * Claims a resource's bootstrap for this grant id, once ever (compare-and-set): true for the
   * first claim and for a retry of the same grant id, false once another grant claimed it.
   */
  claimBootstrap(tenant: string, resource: ScopeRef, grantId: string): Promise<boolean>;
  /** `configured`: no first admin grant on the issuer's word (MEMORY_ADMIN_BOOTSTRAP); default `issuer`. */
  bootstrap?: 'issuer' | 'configured';
}

export const adminDepsOf = (deps: Pick<BrokerDeps, 'pdp' | 'state' | 'config'>): AdminDeps => ({
  pdp: deps.pdp,
  grants: (tenant) => deps.state.policies.grants(tenant),
  claimBootstrap: (tenant, resource, grantId) => deps.state.policies.claimAdminBootstrap(tenant, `${resource.kind}:${resource.id}`, grantId),
  bootstrap: deps.config.adminBootstrap ?? 'issuer',
});

const teamPartition = (tenant: string, resource: ResourceRef): string =>
  partitionKey({ tenantId: tenant, resource, visibility: 'team', sensitivity: 'normal', ownerPrincipalId: '' });

const notAdmin = (what: string) => new GovernedMemoryError('CAP_SCOPE_DENIED', `the principal holds no admin grant ${what} for this purpose`);

/** The partitions this capability may administer (Cedar's answer for action `admin`). */
async function adminPartitions(deps: AdminDeps, claims: CapabilityClaims): Promise<string[]> {
  requireAction(claims, 'admin');
  return deps.pdp.authorizedPartitions({ claims, action: 'admin' });
}

/** Administration of these resources (a grant's): Cedar's `admin` on each — on the tenant for the tenant itself. */
export async function authorizeAdmin(deps: AdminDeps, claims: CapabilityClaims, resources: ScopeRef[]): Promise<void> {
  for (const resource of resources) {
    if (!inScope(claims, resource)) throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'the resource is outside the capability\'s scopes');
  }
  if (resources.some(isTenantRef)) await authorizeTenantAdmin(deps, claims);
  const onResources = resources.filter((r): r is ResourceRef => !isTenantRef(r));
  if (onResources.length === 0) return;
  const allowed = new Set(await adminPartitions(deps, claims));
  const denied = onResources.find((r) => !allowed.has(teamPartition(claims.tenant, r)));
  if (denied !== undefined) throw notAdmin(`on ${denied.kind}:${denied.id}`);
}

/** Tenant-wide administration (legal holds, agent revocation, every deletion job): Cedar's `admin` on the tenant. */
export async function authorizeTenantAdmin(deps: AdminDeps, claims: CapabilityClaims): Promise<void> {
  requireAction(claims, 'admin');
  if (!(await deps.pdp.authorizesTenant({ claims, action: 'admin' }))) throw notAdmin('on the tenant (a capability scoped to {kind: "tenant"})');
}

/** The same question without throwing: may this capability read every deletion job of its tenant? */
export async function isTenantAdmin(deps: AdminDeps, claims: CapabilityClaims): Promise<boolean> {
  return deps.pdp.authorizesTenant({ claims, action: 'admin' });
}

/**
 * The administrators of MEMORY_BOOTSTRAP_ADMINS, granted at start as `bootstrap.<principal>.<kind>.<id>`:
 * produced once (a grant already there as configured is left alone), not waited for — the
 * policy projector applies them when it runs. Answers how many were produced.
 */
export async function grantBootstrapAdmins(
  admins: NonNullable<BrokerConfig['bootstrapAdmins']>, state: StateStore, policy: PolicyGateway, log: Logger,
): Promise<number> {
  let produced = 0;
  for (const admin of admins) {
    const grantId = `bootstrap.${admin.principal.id}.${admin.resource.kind}.${admin.resource.id}`;
    const existing = await state.policies.grant(admin.tenant, grantId);
    const purposes = [...new Set(admin.purposes)].sort();
    if (existing && existing.role === 'admin' && [...existing.purposes].sort().join() === purposes.join()) continue;
    const grant = { grantId, tenant: admin.tenant, principal: admin.principal, resource: admin.resource, role: 'admin' as const, purposes, restricted: [] };
    await policy.produce(admin.tenant, { agentId: 'bootstrap', principalId: 'operator' }, 'GrantAdded', { grant });
    log.info({ tenant: admin.tenant, grantId, principal: admin.principal.id }, 'bootstrap admin grant produced (MEMORY_BOOTSTRAP_ADMINS)');
    produced += 1;
  }
  return produced;
}

/**
 * Adding a grant: Cedar's `admin` on its resource — or the bootstrap, the first admin grant of a
 * resource (or of the tenant) that never had one, on the issuer's word, claimed by a
 * compare-and-set so that two concurrent first grants cannot both succeed. Says which it was.
 */
export async function authorizeGrant(
  deps: AdminDeps, claims: CapabilityClaims, grant: Pick<Grant, 'resource' | 'role'> & { grantId?: string | undefined },
): Promise<'cedar' | 'bootstrap'> {
  try {
    await authorizeAdmin(deps, claims, [grant.resource]);
    return 'cedar';
  } catch (err) {
    if (deps.bootstrap === 'configured' || grant.role !== 'admin' || grant.grantId === undefined || !(err instanceof GovernedMemoryError) || err.code !== 'CAP_SCOPE_DENIED' || !inScope(claims, grant.resource)) throw err;
    const administered = (await deps.grants(claims.tenant))
      .some((g) => g.role === 'admin' && g.resource.kind === grant.resource.kind && g.resource.id === grant.resource.id);
    if (administered || !(await deps.claimBootstrap(claims.tenant, grant.resource, grant.grantId))) throw err;
    return 'bootstrap';
  }
}

/** Whether the capability speaks for its principal itself rather than as a delegated agent. */
const actsForItself = (claims: CapabilityClaims): boolean => claims.sub === claims.act.sub;

/** Cedar's `admin` on every one of these resources (false without the `admin` action). */
async function administers(deps: AdminDeps, claims: CapabilityClaims, resources: readonly ResourceRef[]): Promise<boolean> {
  if (!claims.actions.includes('admin')) return false;
  const allowed = new Set(await deps.pdp.authorizedPartitions({ claims, action: 'admin' }));
  return resources.every((r) => allowed.has(teamPartition(claims.tenant, r)));
}

/**
 * A delegation: within the capability's scopes; beyond the principal's own actions only for an
 * administrator of every delegated resource (Cedar). What the agent may then do is bounded at
 * each use by the delegator's grants anyway (policy rule 8).
 */
export async function authorizeDelegation(deps: AdminDeps, claims: CapabilityClaims, delegation: Pick<Delegation, 'resources' | 'actions'>): Promise<void> {
  for (const resource of delegation.resources) {
    if (!inScope(claims, resource)) throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'a delegated resource is outside the capability\'s scopes');
  }
  if (await administers(deps, claims, delegation.resources)) return;
  if (!actsForItself(claims)) {
    throw new GovernedMemoryError('CAP_ACTION_DENIED', 'a delegated agent cannot delegate further; the principal\'s own capability or "admin" is needed');
  }
  if (!delegation.actions.every((a) => claims.actions.includes(a))) {
    throw new GovernedMemoryError('CAP_ACTION_DENIED', 'a principal may delegate only actions its capability grants');
  }
}

/** May this capability revoke that delegation? (the delegator itself, or an administrator of all its resources: Cedar) */
export async function mayRevokeDelegation(deps: AdminDeps, claims: CapabilityClaims, delegation: Delegation): Promise<boolean> {
  if (actsForItself(claims) && claims.act.sub === delegation.delegatorId) return true;
  return delegation.resources.every((r) => inScope(claims, r)) && (await administers(deps, claims, delegation.resources));
}
