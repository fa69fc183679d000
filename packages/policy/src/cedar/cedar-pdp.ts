import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { GovernedMemoryError, isTenantRef, type Clock, type Grant, type PolicySnapshot, type PolicySource, type TenantRef } from '@gm/contracts';
import type { AuthorizationRequest, PolicyDecisionPoint } from '../pdp.ts';
import { candidatePartitions, cedarRequest, nextBoundary, resourceId, tenantCandidate, type Candidate, type Caller, type SnapshotDelegation } from './entities.ts';
import { compilePolicySet, type CompiledPolicySet, type PolicySetText } from './policy-set.ts';

export interface CedarPdpOptions {
  source: PolicySource;
  clock: Clock;
  /** From loadPolicySet / compilePolicySet, or the texts (validated here, throws PolicySetError). */
  policySet: CompiledPolicySet | PolicySetText;
  /** Cached decisions per tenant before the oldest are dropped. */
  maxCachedDecisions?: number;
  /**
   * Check every request's entities and context against the schema. It only ever rejects (a
   * bug in the entity builder, MEM_INTERNAL), never changes a decision, and costs ≈+40% a
   * Cedar call — the tests turn it on, services need not.
   */
  validateRequests?: boolean;
}

/** A tenant's policy data at one revision, indexed for the PDP. */
interface TenantView {
  revision: number;
  /** Grants by `principal \0 resource`. */
  grants: Map<string, Grant[]>;
  /** The latest delegation by `delegator \0 agent` (the snapshot lists them in order applied). */
  delegations: Map<string, SnapshotDelegation>;
  revokedAgents: ReadonlySet<string>;
  /** Decisions by `agent \0 principal \0 purpose \0 action \0 partition`, for this revision only. */
  decisions: Map<string, CachedDecision>;
}

interface CachedDecision {
  allowed: boolean;
  /** The decision holds in [computedAt, validUntil): grant and delegation bounds flip it. */
  computedAt: number;
  validUntil: number;
}

const SEP = '\u0000';

/**
 * The Cedar policy decision point (§6.2). For each resource in the capability's scopes it
 * asks Cedar about the candidate partitions (team, own private, three restricted), once per
 * grant the principal holds on that resource, and returns the allowed partitions. The
 * capability's scopes and actions are a ceiling: nothing outside them is ever returned.
 *
 * Decisions are cached per (tenant, policy revision, agent, principal, purpose, action,
 * partition) until the next grant or delegation time bound; a new snapshot revision drops
 * the tenant's cache, so a role change takes effect on the very next call (§6.6, §7).
 * The PDP reads the tenant's current snapshot on every call and keys its cache by that
 * snapshot's revision.
 */
export class CedarPolicyDecisionPoint implements PolicyDecisionPoint {
  private readonly policySet: CompiledPolicySet;
  private readonly tenants = new Map<string, TenantView>();
  private readonly source: PolicySource;
  private readonly clock: Clock;
  private readonly maxCachedDecisions: number;
  private readonly validateRequests: boolean;
  /** Counters for metrics and the benchmark: Cedar requests made, decisions served from cache. */
  readonly stats = { cedarRequests: 0, cachedDecisions: 0 };

  constructor(options: CedarPdpOptions) {
    this.source = options.source;
    this.clock = options.clock;
    this.policySet = 'id' in options.policySet ? options.policySet : compilePolicySet(options.policySet);
    this.maxCachedDecisions = options.maxCachedDecisions ?? 50_000;
    this.validateRequests = options.validateRequests ?? false;
  }

  async authorizedPartitions({ claims, action }: AuthorizationRequest): Promise<string[]> {
    if (!claims.actions.includes(action)) return [];
    const { view, caller } = await this.callerOf(claims);
    const now = this.clock.now();
    const allowed = new Set<string>();
    const seen = new Set<string>();
    for (const resource of claims.scopes) {
      // The tenant scope has no partitions: it is asked about by authorizesTenant only.
      if (isTenantRef(resource)) continue;
      const rid = resourceId(resource);
      if (seen.has(rid)) continue;
      seen.add(rid);
      const grants = view.grants.get(caller.principalId + SEP + rid) ?? [];
      for (const partition of candidatePartitions(claims.tenant, resource, caller.principalId)) {
        if (this.decide(view, caller, action, partition, grants, now)) allowed.add(partition.key);
      }
    }
    return [...allowed].sort();
  }

  async authorizesTenant({ claims, action }: AuthorizationRequest): Promise<boolean> {
    if (!claims.actions.includes(action)) return false;
    // The capability is the ceiling here too: only one that names its tenant among its scopes.
    const tenantRef: TenantRef = { kind: 'tenant', id: claims.tenant };
    if (!claims.scopes.some((s) => isTenantRef(s) && s.id === claims.tenant)) return false;
    const { view, caller } = await this.callerOf(claims);
    const grants = view.grants.get(caller.principalId + SEP + resourceId(tenantRef)) ?? [];
    return this.decide(view, caller, action, tenantCandidate(claims.tenant), grants, this.clock.now());
  }

  private async callerOf(claims: AuthorizationRequest['claims']): Promise<{ view: TenantView; caller: Caller }> {
    const view = this.view(await this.source.snapshot(claims.tenant), claims.tenant);
    const caller: Caller = {
      tenant: claims.tenant,
      agentId: claims.sub,
      principalId: claims.act.sub,
      principalKind: claims.act.kind,
      purpose: claims.purpose,
      revokedAgents: view.revokedAgents,
      // An agent acting for itself is bound by its own grants only. An agent acting for a
      // principal is bound by the latest delegation of the pair; with no delegation record
      // at all it acts with the principal's grants — the capability issuer vouched for it.
      delegation: claims.sub === claims.act.sub ? undefined : view.delegations.get(claims.act.sub + SEP + claims.sub),
    };
    return { view, caller };
  }

  private decide(view: TenantView, caller: Caller, action: string, partition: Candidate, grants: Grant[], now: Date): boolean {
    const key = [caller.agentId, caller.principalId, caller.purpose, action, partition.key].join(SEP);
    const t = now.getTime();
    const cached = view.decisions.get(key);
    if (cached !== undefined && cached.computedAt <= t && t < cached.validUntil) {
      this.stats.cachedDecisions += 1;
      return cached.allowed;
    }

    // Default deny: no grant of the principal on this resource, no request to Cedar.
    const allowed = grants.some((grant) => this.isAllowed(cedarRequest(caller, action, partition, grant, now)));
    if (view.decisions.size >= this.maxCachedDecisions) {
      const oldest = view.decisions.keys().next();
      if (oldest.done !== true) view.decisions.delete(oldest.value);
    }
    view.decisions.set(key, { allowed, computedAt: t, validUntil: nextBoundary(grants, caller.delegation, now) });
    return allowed;
  }

  private isAllowed(request: ReturnType<typeof cedarRequest>): boolean {
    this.stats.cedarRequests += 1;
    const answer = cedar.statefulIsAuthorized({
      ...request,
      preparsedPolicySetId: this.policySet.id,
      ...(this.validateRequests ? { preparsedSchemaName: this.policySet.schemaName, validateRequest: true } : {}),
    });
    if (answer.type === 'failure') {
      // Our own request did not fit the schema: a bug, not a denial to hide.
      const detail = answer.errors.map((e) => e.message).join('; ');
      throw new GovernedMemoryError('MEM_INTERNAL', `Cedar rejected the authorization request: ${detail}`);
    }
    // A policy that errors is skipped by Cedar — for a forbid that would fail open, so any
    // evaluation error denies. Strict validation should make this unreachable.
    return answer.response.decision === 'allow' && answer.response.diagnostics.errors.length === 0;
  }

  private view(snapshot: PolicySnapshot, tenant: string): TenantView {
    if (snapshot.tenant !== tenant) {
      throw new GovernedMemoryError('MEM_INTERNAL', `policy source answered for tenant ${snapshot.tenant}, asked for ${tenant}`);
    }
    const current = this.tenants.get(tenant);
    if (current !== undefined && current.revision === snapshot.revision) return current;

    const grants = new Map<string, Grant[]>();
    for (const grant of snapshot.grants) {
      if (grant.tenant !== tenant) continue;
      const key = grant.principal.id + SEP + resourceId(grant.resource);
      grants.set(key, [...(grants.get(key) ?? []), grant]);
    }
    const delegations = new Map<string, SnapshotDelegation>();
    // Not filtered by tenant: a stray delegation still bounds its pair (Cedar then denies).
    for (const d of snapshot.delegations) delegations.set(d.delegatorId + SEP + d.agentId, d);
    const view: TenantView = {
      revision: snapshot.revision,
      grants,
      delegations,
      revokedAgents: new Set(snapshot.revokedAgents),
      decisions: new Map(),
    };
    this.tenants.set(tenant, view);
    return view;
  }
}
