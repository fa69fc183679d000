import type { CedarValueJson, EntityJson, TypeAndId } from '@cedar-policy/cedar-wasm/nodejs';
import type { Delegation, Grant, PolicySnapshot, ResourceRef, ScopeRef, Sensitivity, TenantRef, Visibility } from '@gm/contracts';
import { partitionKey } from '@gm/domain';

/**
 * Translation of a tenant's policy data into the Cedar entities and context of one request
 * (entity model: packages/policy/policies/schema.cedarschema).
 */

export type SnapshotDelegation = PolicySnapshot['delegations'][number];

/** What one Cedar request is about: a partition of a resource, or the tenant as a whole. */
export type Candidate = PartitionCandidate | TenantCandidate;

export interface PartitionCandidate {
  type: 'Partition';
  key: string;
  resource: ResourceRef;
  visibility: Visibility;
  sensitivity: Sensitivity;
  /** Set for a private partition. */
  owner?: string;
}

export interface TenantCandidate {
  type: 'Tenant';
  /** Never a partition key (those start with the tenant's encoding), so the decision cache keeps them apart. */
  key: string;
  resource: TenantRef;
}

/** The tenant itself as the resource of a request (tenant-wide administration and erasure). */
export const tenantCandidate = (tenantId: string): TenantCandidate =>
  ({ type: 'Tenant', key: `\u0000tenant\u0000${tenantId}`, resource: { kind: 'tenant', id: tenantId } });

const SENSITIVITIES: readonly Sensitivity[] = ['normal', 'confidential', 'restricted'];

/**
 * The partitions a capability could reach on one of its scopes: the team partition, the
 * principal's own private partition and the three restricted ones. Nothing else is ever
 * asked about, so the capability's scopes are a ceiling whatever the policy says.
 */
export function candidatePartitions(tenantId: string, resource: ResourceRef, principalId: string): PartitionCandidate[] {
  const key = (visibility: Visibility, sensitivity: Sensitivity) =>
    partitionKey({ tenantId, resource, visibility, sensitivity, ownerPrincipalId: principalId });
  return [
    { type: 'Partition', key: key('team', 'normal'), resource, visibility: 'team', sensitivity: 'normal' },
    { type: 'Partition', key: key('private', 'normal'), resource, visibility: 'private', sensitivity: 'normal', owner: principalId },
    ...SENSITIVITIES.map((s): PartitionCandidate => ({ type: 'Partition', key: key('restricted', s), resource, visibility: 'restricted', sensitivity: s })),
  ];
}

export const resourceId = (r: ScopeRef): string => `${r.kind}:${r.id}`;

const uid = (type: string, id: string): TypeAndId => ({ type, id });
const ref = (type: string, id: string): CedarValueJson => ({ __entity: uid(type, id) });
// Cedar's datetime wants `YYYY-MM-DDThh:mm:ss.sssZ`; IsoTime allows offsets like +01:00.
const datetime = (iso: string | Date): CedarValueJson => ({
  __extn: { fn: 'datetime', arg: (typeof iso === 'string' ? new Date(iso) : iso).toISOString() },
});
const entity = (type: string, id: string, attrs: Record<string, CedarValueJson>): EntityJson => ({ uid: uid(type, id), attrs, parents: [] });

/** What the PDP knows of the caller, fixed for one authorizedPartitions call. */
export interface Caller {
  tenant: string;
  agentId: string;
  principalId: string;
  principalKind: string;
  purpose: string;
  revokedAgents: ReadonlySet<string>;
  /** The latest delegation principal → agent, if the agent acts for someone else and one exists. */
  delegation: SnapshotDelegation | undefined;
}

export interface CedarRequest {
  principal: TypeAndId;
  action: TypeAndId;
  resource: TypeAndId;
  context: Record<string, CedarValueJson>;
  entities: EntityJson[];
}

/** One Cedar request: may the caller's agent take `action` on `partition` by virtue of `grant`? */
export function cedarRequest(caller: Caller, action: string, partition: Candidate, grant: Grant, now: Date): CedarRequest {
  const resource = resourceId(partition.resource);
  const entities: EntityJson[] = [
    entity('Agent', caller.agentId, { revoked: caller.revokedAgents.has(caller.agentId) }),
    entity('Principal', caller.principalId, { kind: caller.principalKind, revoked: caller.revokedAgents.has(caller.principalId) }),
    partition.type === 'Tenant'
      ? entity('Tenant', partition.key, { tenant: caller.tenant, resource })
      : entity(
        'Partition',
        partition.key,
        {
          tenant: caller.tenant,
          resource,
          visibility: ref('Visibility', partition.visibility),
          sensitivity: ref('Sensitivity', partition.sensitivity),
          ...(partition.owner === undefined ? {} : { owner: ref('Principal', partition.owner) }),
        },
      ),
  ];
  // The grant's holder is the caller's principal (the PDP only picks such grants); should it
  // ever not be, Cedar sees an unknown holder and the grant-holder rule denies.
  const context: Record<string, CedarValueJson> = {
    tenant: caller.tenant,
    purpose: caller.purpose,
    now: datetime(now),
    onBehalfOf: ref('Principal', caller.principalId),
    grant: grantRecord(grant),
  };
  if (caller.delegation !== undefined) context['delegation'] = delegationRecord(caller.delegation);
  return { principal: uid('Agent', caller.agentId), action: uid('Action', action), resource: uid(partition.type, partition.key), context, entities };
}

function grantRecord(g: Grant): CedarValueJson {
  return {
    tenant: g.tenant,
    holder: ref('Principal', g.principal.id),
    resource: resourceId(g.resource),
    role: ref('Role', g.role),
    purposes: g.purposes,
    restricted: g.restricted.map((s) => ref('Sensitivity', s)),
    ...(g.notBefore === undefined ? {} : { notBefore: datetime(g.notBefore) }),
    ...(g.notAfter === undefined ? {} : { notAfter: datetime(g.notAfter) }),
  };
}

function delegationRecord(d: SnapshotDelegation): CedarValueJson {
  return {
    tenant: d.tenant,
    delegator: ref('Principal', d.delegatorId),
    agent: ref('Agent', d.agentId),
    resources: d.resources.map(resourceId),
    purposes: d.purposes,
    actions: d.actions.map((a) => ref('ActionName', a)),
    ...(d.notAfter === undefined ? {} : { notAfter: datetime(d.notAfter) }),
    revoked: d.revoked,
  };
}

/**
 * The instants at which a decision over these grants and this delegation may flip: a
 * cached decision is good until the earliest of them that is still ahead.
 */
export function nextBoundary(grants: readonly Grant[], delegation: Delegation | undefined, now: Date): number {
  const t = now.getTime();
  let next = Number.POSITIVE_INFINITY;
  const consider = (iso: string | undefined) => {
    if (iso === undefined) return;
    const at = Date.parse(iso);
    if (at > t && at < next) next = at;
  };
  for (const g of grants) {
    consider(g.notBefore);
    consider(g.notAfter);
  }
  consider(delegation?.notAfter);
  return next;
}
