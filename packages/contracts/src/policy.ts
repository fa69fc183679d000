import { z } from 'zod';
import { Action } from './capability.ts';
import { Id, IsoTime, PrincipalKind, SubjectId, Purpose, ResourceRef, ScopeRef, Sensitivity } from './primitives.ts';

/**
 * The policy data of a tenant (design §6.2): who holds which role on which resource,
 * for which purposes, until when; which agents act for which principals within which bounds;
 * what is revoked and what is on legal hold. It changes only through `policy.changes`
 * messages; each applied change bumps the tenant's policy revision.
 *
 * Roles say what a grant's holder may do on the resource; the Cedar policy set gives them
 * meaning (packages/policy/policies):
 * - `member`   search, read, cite, write, request_delete on the team partition and the
 *              holder's own private partition;
 * - `reviewer` review and promote quarantined records of those partitions;
 * - `manager`  what a member may, plus the resource's confidential restricted partition;
 * - `admin`    on a resource: its grants, delegations and record revocations; on the tenant
 *              (`{kind: 'tenant'}`): legal holds, agent revocation, every deletion job, the ops
 *              overview, and grants on the tenant itself;
 * - `privacy_officer` (on the tenant only): forgets a data subject across every resource
 *              (a GDPR Art. 17 request), and reads those jobs.
 * Restricted partitions beyond that need `restricted` on a grant: the sensitivities the
 * holder may read there (an explicit resource grant, §6.2).
 */
export const Role = z.enum(['member', 'reviewer', 'manager', 'admin', 'privacy_officer']);
export type Role = z.infer<typeof Role>;

/** The roles a grant on the tenant may carry; every other role is a resource's. */
export const TENANT_ROLES: readonly Role[] = ['admin', 'privacy_officer'];

export const GrantPrincipal = z.object({ id: Id, kind: PrincipalKind }).strict();
export type GrantPrincipal = z.infer<typeof GrantPrincipal>;

export const Grant = z
  .object({
    grantId: Id,
    tenant: Id,
    principal: GrantPrincipal,
    /** A resource, or the tenant itself (`{kind: 'tenant', id: <tenant>}`) for the tenant roles. */
    resource: ScopeRef,
    role: Role,
    /** The purposes the holder may use the resource for; a capability's purpose must be one. */
    purposes: z.array(Purpose).min(1).max(32),
    /** Sensitivities of the resource's restricted partitions this grant opens (default none). */
    restricted: z.array(Sensitivity).max(3).default([]),
    /** A time-bounded grant (contractors): void before notBefore and from notAfter on. */
    notBefore: IsoTime.optional(),
    notAfter: IsoTime.optional(),
  })
  .strict();
export type Grant = z.infer<typeof Grant>;

/**
 * What a grant says, in one canonical form: its holder, resource, role, purposes and
 * restricted sensitivities as sets, and its bounds. A grant id names one grant for ever
 * (design §6.2): two grants are the same fact exactly when these agree.
 */
export function grantContent(grant: Omit<Grant, 'grantId' | 'tenant'>): string {
  const set = (values: readonly string[]) => [...new Set(values)].sort();
  return JSON.stringify([
    grant.principal.kind, grant.principal.id, grant.resource.kind, grant.resource.id, grant.role,
    set(grant.purposes), set(grant.restricted), grant.notBefore ?? null, grant.notAfter ?? null,
  ]);
}

/** The ids of configured administrators' grants (MEMORY_BOOTSTRAP_ADMINS) start so; the API's are ULIDs. */
export const CONFIGURED_GRANT_PREFIX = 'bootstrap.';

/** Whether a grant is an administrator's grant on this resource (or tenant) that is in force now or later. */
export const administersNowOrLater = (grant: Grant, resource: ScopeRef, nowMs: number): boolean =>
  grant.role === 'admin' && grant.resource.kind === resource.kind && grant.resource.id === resource.id
  && (grant.notAfter === undefined || Date.parse(grant.notAfter) > nowMs);

/**
 * A principal lets an agent act for it within bounds. A capability whose agent is not its
 * principal reaches at most the intersection of the principal's grants and these bounds; a
 * revoked delegation denies that agent everything on the principal's behalf.
 */
export const Delegation = z
  .object({
    delegationId: Id,
    tenant: Id,
    delegatorId: Id,
    agentId: Id,
    resources: z.array(ResourceRef).min(1).max(64),
    purposes: z.array(Purpose).min(1).max(32),
    actions: z.array(Action).min(1),
    notAfter: IsoTime.optional(),
  })
  .strict();
export type Delegation = z.infer<typeof Delegation>;

/** Keeps a subject's records from being purged: deletion then yields `access_revoked_retained`. */
export const LegalHold = z
  .object({ holdId: Id, tenant: Id, subjectId: SubjectId, reason: z.string().min(1).max(500) })
  .strict();
export type LegalHold = z.infer<typeof LegalHold>;

export const PolicyChangeMetadata = z
  .object({
    changeId: Id,
    tenant: Id,
    /** Who asked, from the verified capability (ids only). */
    requestedBy: z.object({ agentId: Id, principalId: Id }).strict(),
    occurredAt: IsoTime,
  })
  .strict();
export type PolicyChangeMetadata = z.infer<typeof PolicyChangeMetadata>;

const change = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ type: z.literal(type), data, metadata: PolicyChangeMetadata }).strict();

/** Messages of `policy.changes`, keyed by tenant so that one tenant's changes stay in order. */
export const GrantAdded = change('GrantAdded', z.object({ grant: Grant }).strict());
export const GrantRemoved = change('GrantRemoved', z.object({ grantId: Id }).strict());
export const DelegationAdded = change('DelegationAdded', z.object({ delegation: Delegation }).strict());
export const DelegationRevoked = change('DelegationRevoked', z.object({ delegationId: Id }).strict());
/** `expiresAt`: the capability's own expiry — the revocation need not outlive it. */
export const CapabilityRevoked = change('CapabilityRevoked', z.object({ jti: Id, expiresAt: IsoTime }).strict());
export const AgentRevoked = change('AgentRevoked', z.object({ agentId: Id }).strict());
export const LegalHoldPlaced = change('LegalHoldPlaced', z.object({ hold: LegalHold }).strict());
export const LegalHoldReleased = change('LegalHoldReleased', z.object({ holdId: Id }).strict());

export const PolicyChange = z.discriminatedUnion('type', [
  GrantAdded, GrantRemoved, DelegationAdded, DelegationRevoked, CapabilityRevoked, AgentRevoked, LegalHoldPlaced, LegalHoldReleased,
]);
export type PolicyChange = z.infer<typeof PolicyChange>;
export type PolicyChangeType = PolicyChange['type'];

/**
 * A tenant's policy data at one revision: what the policy decision point decides over.
 * Removed grants are gone; revoked delegations stay (marked) because their absence would
 * widen what the agent may do.
 */
export interface PolicySnapshot {
  tenant: string;
  revision: number;
  grants: Grant[];
  delegations: Array<Delegation & { revoked: boolean }>;
  revokedAgents: string[];
  legalHolds: LegalHold[];
}

/** Where the PDP reads a tenant's policy data (the state store in both runtimes). */
export interface PolicySource {
  snapshot(tenant: string): Promise<PolicySnapshot>;
}
