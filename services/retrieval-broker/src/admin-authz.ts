import { createHash } from 'node:crypto';
import { CONFIGURED_GRANT_PREFIX, GovernedMemoryError, grantContent, isTenantRef, type CapabilityClaims, type Delegation, type Grant, type ResourceRef, type ScopeRef } from '@gm/contracts';
import { keyOf } from '@gm/ids';
import { partitionKey } from '@gm/domain';
import type { Logger } from '@gm/observability';
import { inScope, requireAction, type PolicyDecisionPoint } from '@gm/policy';
import type { StateStore } from '@gm/state-store';
import type { BrokerConfig, BrokerDeps } from './deps.ts';
import type { BootstrapAdmin } from './env.ts';
import type { PolicyGateway } from './policy-gateway.ts';

/*
 * Who may change policy (design §6.2, rules 7 and 12, and "the administration plane's
 * invariants"). Administration is decided by the Cedar PDP like every other action: the
 * capability must carry `admin` (and the resource must be in its scopes), and its principal must
 * hold an `admin` grant that the policy set lets it use for this purpose, now. The one exception
 * is the bootstrap: a resource (or the tenant) that never had an admin grant may get its first one
 * on the issuer's word (an `admin` capability scoped to it, which only the issuer credential
 * mints) — otherwise nobody could ever start. It happens once per resource whatever the grant (a
 * compare-and-set, and never for a resource that had an admin grant by any route).
 * - grants: admin on the grant's resource, or on the tenant (who restores a resource whose
 *   administrators are gone); a grant on the tenant: admin on the tenant. Removal is decided on
 *   the stored grant, and a resource's last admin grant goes only at the tenant's admin's request;
 * - legal holds, agent revocation, another principal's capability, every deletion job of the
 *   tenant, the ops overview: admin on the tenant (`{kind: 'tenant'}`, rule 12);
 * - delegations: the delegator is always the capability's principal. A capability with
 *   `admin` may delegate any action on resources in its scopes; the principal's *own*
 *   capability (its agent is the principal itself) may delegate at most its own actions on
 *   its own scopes; an agent acting for someone may not delegate further.
 */

export interface AdminDeps {
  pdp: PolicyDecisionPoint;
  /** Whether the resource (or the tenant) ever had an admin grant (the state store's fold, policies.ts). */
  everAdministered(tenant: string, resource: ScopeRef): Promise<boolean>;
  /** Claims a resource's bootstrap, once ever whatever the grant (compare-and-set): true for the first claim only. */
  claimBootstrap(tenant: string, resource: ScopeRef): Promise<boolean>;
  /** `configured`: no first admin grant on the issuer's word (MEMORY_ADMIN_BOOTSTRAP); default `issuer`. */
  bootstrap?: 'issuer' | 'configured';
}

export const adminDepsOf = (deps: Pick<BrokerDeps, 'pdp' | 'state' | 'config'>): AdminDeps => ({
  pdp: deps.pdp,
  everAdministered: (tenant, resource) => deps.state.policies.everAdministered(tenant, resource),
  claimBootstrap: (tenant, resource) => deps.state.policies.claimAdminBootstrap(tenant, resource),
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
 * The id of a configured administrator's grant: derived from its whole content, so that a
 * changed configuration is a new grant (grant ids name one grant for ever, design §6.2) and
 * no caller can name it (the API assigns every other id). Fixed length, whatever the ids.
 */
export const configuredGrantId = (grant: Omit<Grant, 'grantId'>): string =>
  `${CONFIGURED_GRANT_PREFIX}${createHash('sha256').update(keyOf(grant.tenant, grantContent(grant))).digest('hex').slice(0, 40)}`;

/** The id the configuration used before ids were derived from content: `bootstrap.<principal>.<kind>.<id>`. */
const legacyConfiguredGrantId = (admin: BootstrapAdmin): string => `bootstrap.${admin.principal.id}.${admin.resource.kind}.${admin.resource.id}`;

const sameRef = (a: { kind: string; id: string }, b: { kind: string; id: string }): boolean => a.kind === b.kind && a.id === b.id;

/**
 * The administrators of MEMORY_BOOTSTRAP_ADMINS, granted at start: each checked by its whole
 * content (its id is derived from it), produced when missing, not waited for — the policy
 * projector applies them when it runs. An earlier configured grant of the same administrator
 * on the same resource, and whatever the id the configuration once used holds now, are
 * removed after the new one is added (so the tenant never lacks its administrator in between).
 * Answers how many changes were produced.
 */
export async function grantBootstrapAdmins(
  admins: NonNullable<BrokerConfig['bootstrapAdmins']>, state: StateStore, policy: PolicyGateway, log: Logger,
): Promise<number> {
  let produced = 0;
  const operator = { agentId: 'bootstrap', principalId: 'operator' };
  for (const admin of admins) {
    const grant = {
      tenant: admin.tenant, principal: admin.principal, resource: admin.resource, role: 'admin' as const,
      purposes: [...new Set(admin.purposes)].sort(), restricted: [],
    };
    const grantId = configuredGrantId(grant);
    if ((await state.policies.grant(admin.tenant, grantId)) === null) {
      await policy.produce(admin.tenant, operator, 'GrantAdded', { grant: { ...grant, grantId } });
      log.info({ tenant: admin.tenant, grantId, principal: admin.principal.id }, 'bootstrap admin grant produced (MEMORY_BOOTSTRAP_ADMINS)');
      produced += 1;
    }
    const legacyId = legacyConfiguredGrantId(admin);
    const stale = (await state.policies.grants(admin.tenant)).filter((g) => g.grantId !== grantId && (g.grantId === legacyId
      || (g.grantId.startsWith(CONFIGURED_GRANT_PREFIX) && sameRef(g.principal, admin.principal) && sameRef(g.resource, admin.resource))));
    for (const g of stale) {
      await policy.produce(admin.tenant, operator, 'GrantRemoved', { grantId: g.grantId });
      log.info({ tenant: admin.tenant, grantId: g.grantId, replacedBy: grantId }, 'an earlier configured admin grant removed (MEMORY_BOOTSTRAP_ADMINS)');
      produced += 1;
    }
  }
  return produced;
}

/**
 * Who manages the grants of a resource: its administrator (Cedar's `admin` on it), or the
 * tenant's (Cedar's `admin` on the tenant, the resource in scope too) — the tenant's
 * administrator is who restores a resource whose administrators are gone (design §6.2). Grants
 * on the tenant itself: the tenant's administrator only.
 */
export async function authorizeGrantsOf(deps: AdminDeps, claims: CapabilityClaims, resource: ScopeRef): Promise<void> {
  if (isTenantRef(resource)) return authorizeAdmin(deps, claims, [resource]);
  try {
    await authorizeAdmin(deps, claims, [resource]);
  } catch (err) {
    if (!(err instanceof GovernedMemoryError) || err.code !== 'CAP_SCOPE_DENIED' || !inScope(claims, resource)) throw err;
    if (!(await isTenantAdmin(deps, claims))) throw err;
  }
}

/**
 * Adding a grant: `authorizeGrantsOf` its resource — or the bootstrap, the first admin grant of
 * a resource (or of the tenant) that never had one, on the issuer's word. The bootstrap happens
 * once per resource, whatever the grant: never again once the resource had an admin grant by
 * any route, and claimed by a compare-and-set so that of two concurrent first grants one wins.
 * Says which it was.
 */
export async function authorizeGrant(deps: AdminDeps, claims: CapabilityClaims, grant: Pick<Grant, 'resource' | 'role'>): Promise<'cedar' | 'bootstrap'> {
  try {
    await authorizeGrantsOf(deps, claims, grant.resource);
    return 'cedar';
  } catch (err) {
    if (deps.bootstrap === 'configured' || grant.role !== 'admin' || !(err instanceof GovernedMemoryError) || err.code !== 'CAP_SCOPE_DENIED' || !inScope(claims, grant.resource)) throw err;
    if (await deps.everAdministered(claims.tenant, grant.resource)) throw err;
    if (!(await deps.claimBootstrap(claims.tenant, grant.resource))) throw err;
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
