import { createHash } from 'node:crypto';
import {
  CONFIGURED_GRANT_PREFIX, Delegation, Grant, LegalHold, administersNowOrLater, grantContent,
  type PolicyChange, type PolicySnapshot, type PolicySource, type ScopeRef,
} from '@gm/contracts';
import { z } from 'zod';
import type { KeyValueStore } from '../port.ts';
import type { PolicyRevisions, Revocations } from './jobs.ts';
import { memberOf, type KeySpace } from './keys.ts';

const StoredDelegation = Delegation.extend({ revoked: z.boolean() });
type StoredDelegation = z.infer<typeof StoredDelegation>;

/**
 * Why the fold refused a change (design §6.2, "the administration plane's invariants"): the
 * broker checks both before it produces a change, and the fold — one writer per tenant, in the
 * log's order — holds them against races and against a change that reached the log another way.
 * - `grant-id-taken`: a grant id names one grant for ever; an add of other content under it is refused;
 * - `grant-duplicate`: a grant identical to one that is there, under another id (two racing posts
 *   of one grant): the first stands, and the second request answers its id;
 * - `last-admin`: the last administrator's grant of the tenant is removed only by configuration,
 *   the last of a resource only at the request of a principal holding an admin grant on the tenant.
 */
export type PolicyRefusal = 'grant-id-taken' | 'grant-duplicate' | 'last-admin';

export interface AppliedChange {
  /** False when this changeId had been applied before: nothing changed, no revision bump. */
  applied: boolean;
  /** The tenant's policy revision this change produced (a refused change produces none: the current one). */
  revision: number;
  /** Set when the fold refused the change: it changed nothing. */
  refused?: PolicyRefusal;
}

/** The applied marker: the revision, and the refusal if the fold refused the change. */
const appliedMarker = (revision: number, refused: PolicyRefusal | undefined) => (refused === undefined ? String(revision) : `${revision} ${refused}`);
const parseMarker = (raw: string): { revision: number; refused?: PolicyRefusal } => {
  const [revision, refused] = raw.split(' ');
  return refused === undefined ? { revision: Number(revision) } : { revision: Number(revision), refused: refused as PolicyRefusal };
};

const byId = <T>(id: (t: T) => string) => (a: T, b: T) => id(a).localeCompare(id(b));

/**
 * The policy data of every tenant, projected from `policy.changes` (design §6.2, §6.6).
 *
 * Idempotent by changeId: a change records the revision it produced under its changeId, so a
 * redelivery (or a crash between the steps below) never bumps the revision twice. The steps
 * are ordered so that a crash anywhere is repaired by the redelivery the bus guarantees:
 * mutate (each mutation is idempotent) → record changeId → raise the revision. The revision
 * is "current + 1" of a single writer per tenant: policy.changes is keyed by tenant, so one
 * consumer of the group owns a tenant at a time.
 */
export class Policies implements PolicySource {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly keys: KeySpace,
    private readonly revisions: PolicyRevisions,
    private readonly revocations: Revocations,
    private readonly nowMs: () => number,
  ) {}

  /**
   * The bootstrap of a resource's (or the tenant's) first admin grant on the issuer's word,
   * claimed once ever, whatever the grant (compare-and-set, design §6.2): true for the first
   * claim only. Not under `pol:`: it is the broker's decision, not a fold of policy.changes, and
   * a replay must not reopen it.
   */
  async claimAdminBootstrap(tenant: string, resource: ScopeRef): Promise<boolean> {
    return this.kv.set(this.keys.adminBootstrap(tenant, resource.kind, resource.id), '1', { nx: true });
  }

  /**
   * Whether the resource (or the tenant) ever had an admin grant: one applied from the log, one
   * there now (a projection older than this record), or a bootstrap claimed for it. Once it has,
   * the issuer's word alone never grants admin on it again (design §6.2).
   */
  async everAdministered(tenant: string, resource: ScopeRef): Promise<boolean> {
    if ((await this.kv.smembers(this.keys.administeredResources(tenant))).includes(memberOf(resource.kind, resource.id))) return true;
    if ((await this.kv.get(this.keys.adminBootstrap(tenant, resource.kind, resource.id))) !== null) return true;
    if ((await this.kv.get(this.keys.legacyAdminBootstrap(tenant, resource.kind, resource.id))) !== null) return true;
    return (await this.grants(tenant)).some((g) => g.role === 'admin' && g.resource.kind === resource.kind && g.resource.id === resource.id);
  }

  async apply(change: PolicyChange): Promise<AppliedChange> {
    const { tenant, changeId } = change.metadata;
    const appliedKey = this.keys.policyApplied(tenant, changeId);
    const earlier = await this.kv.get(appliedKey);
    if (earlier !== null) {
      const { revision, refused } = parseMarker(earlier);
      if (refused === undefined) await this.raiseRevision(tenant, revision);
      return { applied: false, revision, ...(refused === undefined ? {} : { refused }) };
    }
    const refused = await this.refusal(change);
    if (refused !== undefined) {
      const revision = await this.revisions.current(tenant);
      return (await this.record(tenant, appliedKey, revision, refused)) ?? { applied: true, revision, refused };
    }
    const revision = (await this.revisions.current(tenant)) + 1;
    await this.mutate(change);
    await this.kv.sadd(this.keys.policyTenants(), [tenant]);
    const other = await this.record(tenant, appliedKey, revision, undefined);
    if (other !== null) return other;
    await this.raiseRevision(tenant, revision);
    return { applied: true, revision };
  }

  /**
   * Records what a change did, once (set-if-absent). The policy projector is the tenant's one
   * writer, but the deletion-orchestrator applies a released hold itself first (so no job step
   * reads it back from a lagging projection): when both apply one change at once, the first to
   * record it wins and the other answers that outcome, so the change bumps the revision once.
   */
  private async record(tenant: string, appliedKey: string, revision: number, refused: PolicyRefusal | undefined): Promise<AppliedChange | null> {
    if (await this.kv.set(appliedKey, appliedMarker(revision, refused), { nx: true })) return null;
    const earlier = parseMarker((await this.kv.get(appliedKey)) ?? String(revision));
    if (earlier.refused === undefined) await this.raiseRevision(tenant, earlier.revision);
    return { applied: false, revision: earlier.revision, ...(earlier.refused === undefined ? {} : { refused: earlier.refused }) };
  }

  /** The revision a change produced (or, refused, the one it left), or null while it is not applied. */
  async revisionOf(tenant: string, changeId: string): Promise<number | null> {
    return (await this.outcomeOf(tenant, changeId))?.revision ?? null;
  }

  /** What applying a change did, or null while it is not applied. */
  async outcomeOf(tenant: string, changeId: string): Promise<{ revision: number; refused?: PolicyRefusal } | null> {
    const raw = await this.kv.get(this.keys.policyApplied(tenant, changeId));
    return raw === null ? null : parseMarker(raw);
  }

  /**
   * The administration plane's invariants, held by the fold (see PolicyRefusal). Decided from
   * the log alone — the change's own time, the projected grants — so a replay decides the same.
   */
  private async refusal(change: PolicyChange): Promise<PolicyRefusal | undefined> {
    const { tenant, occurredAt, requestedBy } = change.metadata;
    if (change.type === 'GrantAdded') {
      const { grant } = change.data;
      const existing = await this.grant(tenant, grant.grantId);
      if (existing !== null) return grantContent(existing) !== grantContent(grant) ? 'grant-id-taken' : undefined;
      // A configured grant is the configuration's own, whatever the API added before it.
      if (grant.grantId.startsWith(CONFIGURED_GRANT_PREFIX)) return undefined;
      const content = grantContent(grant);
      return (await this.grants(tenant)).some((g) => grantContent(g) === content) ? 'grant-duplicate' : undefined;
    }
    if (change.type !== 'GrantRemoved') return undefined;
    const removed = await this.grant(tenant, change.data.grantId);
    if (removed === null || removed.role !== 'admin') return undefined;
    const now = Date.parse(occurredAt);
    const grants = await this.grants(tenant);
    const others = grants.filter((g) => g.grantId !== removed.grantId && administersNowOrLater(g, removed.resource, now));
    if (others.length > 0) return undefined;
    // The configuration replaces its tenant administrators by adding the new grant first.
    if (removed.resource.kind === 'tenant') return 'last-admin';
    const tenantRef = { kind: 'tenant', id: tenant } as const;
    const byTenantAdmin = grants.some((g) => g.principal.id === requestedBy.principalId && administersNowOrLater(g, tenantRef, now));
    return byTenantAdmin ? undefined : 'last-admin';
  }

  private async raiseRevision(tenant: string, revision: number): Promise<void> {
    if ((await this.revisions.current(tenant)) < revision) await this.kv.set(this.keys.policyRevision(tenant), String(revision));
  }

  private async mutate(change: PolicyChange): Promise<void> {
    const { tenant } = change.metadata;
    switch (change.type) {
      case 'GrantAdded': {
        const { grant } = change.data;
        await this.kv.set(this.keys.grant(tenant, grant.grantId), JSON.stringify({ ...grant, tenant }));
        await this.kv.sadd(this.keys.grantsOf(tenant), [grant.grantId]);
        if (grant.role === 'admin') await this.kv.sadd(this.keys.administeredResources(tenant), [memberOf(grant.resource.kind, grant.resource.id)]);
        return;
      }
      case 'GrantRemoved':
        await this.kv.del([this.keys.grant(tenant, change.data.grantId)]);
        await this.kv.srem(this.keys.grantsOf(tenant), [change.data.grantId]);
        return;
      case 'DelegationAdded': {
        const d = change.data.delegation;
        await this.kv.set(this.keys.delegation(tenant, d.delegationId), JSON.stringify({ ...d, tenant, revoked: false }));
        await this.kv.sadd(this.keys.delegationsOf(tenant), [d.delegationId]);
        await this.revocations.restoreDelegate(tenant, d.agentId, d.delegatorId);
        return;
      }
      case 'DelegationRevoked': {
        const d = await this.delegation(tenant, change.data.delegationId);
        if (!d) return;
        await this.kv.set(this.keys.delegation(tenant, d.delegationId), JSON.stringify({ ...d, revoked: true }));
        // Another live delegation of the same pair keeps the agent acting for the principal.
        const live = (await this.delegations(tenant)).some((o) => !o.revoked && o.agentId === d.agentId && o.delegatorId === d.delegatorId);
        if (!live) await this.revocations.revokeDelegate(tenant, d.agentId, d.delegatorId);
        return;
      }
      case 'CapabilityRevoked':
        await this.revocations.revokeCapability(change.data.jti, Date.parse(change.data.expiresAt), this.nowMs());
        return;
      case 'AgentRevoked':
        await this.revocations.revokeAgent(tenant, change.data.agentId);
        await this.kv.sadd(this.keys.revokedAgentsOf(tenant), [change.data.agentId]);
        return;
      case 'LegalHoldPlaced': {
        const { hold } = change.data;
        await this.kv.set(this.keys.legalHold(tenant, hold.holdId), JSON.stringify({ ...hold, tenant }));
        await this.kv.sadd(this.keys.legalHoldsOf(tenant), [hold.holdId]);
        await this.kv.sadd(this.keys.legalHoldsOfSubject(tenant, hold.subjectId), [hold.holdId]);
        return;
      }
      case 'LegalHoldReleased': {
        const hold = await this.legalHold(tenant, change.data.holdId);
        if (!hold) return;
        await this.kv.del([this.keys.legalHold(tenant, hold.holdId)]);
        await this.kv.srem(this.keys.legalHoldsOf(tenant), [hold.holdId]);
        await this.kv.srem(this.keys.legalHoldsOfSubject(tenant, hold.subjectId), [hold.holdId]);
        return;
      }
      default: {
        const never: never = change;
        throw new Error(`unhandled policy change ${JSON.stringify(never)}`);
      }
    }
  }

  private async many<T>(setKey: string, keyOf: (id: string) => string, parse: (raw: unknown) => T, id: (t: T) => string): Promise<T[]> {
    const ids = await this.kv.smembers(setKey);
    if (ids.length === 0) return [];
    const raws = await this.kv.mget(ids.map(keyOf));
    return raws.flatMap((raw) => (raw === null ? [] : [parse(JSON.parse(raw))])).sort(byId(id));
  }

  private async one<T>(key: string, parse: (raw: unknown) => T): Promise<T | null> {
    const raw = await this.kv.get(key);
    return raw === null ? null : parse(JSON.parse(raw));
  }

  grant = (tenant: string, grantId: string) => this.one(this.keys.grant(tenant, grantId), (r) => Grant.parse(r));
  grants = (tenant: string) => this.many(this.keys.grantsOf(tenant), (id) => this.keys.grant(tenant, id), (r) => Grant.parse(r), (g) => g.grantId);
  delegation = (tenant: string, id: string) => this.one(this.keys.delegation(tenant, id), (r) => StoredDelegation.parse(r));
  delegations = (tenant: string): Promise<StoredDelegation[]> =>
    this.many(this.keys.delegationsOf(tenant), (id) => this.keys.delegation(tenant, id), (r) => StoredDelegation.parse(r), (d) => d.delegationId);
  legalHold = (tenant: string, holdId: string) => this.one(this.keys.legalHold(tenant, holdId), (r) => LegalHold.parse(r));
  legalHolds = (tenant: string) =>
    this.many(this.keys.legalHoldsOf(tenant), (id) => this.keys.legalHold(tenant, id), (r) => LegalHold.parse(r), (h) => h.holdId);

  /** The subject's legal hold (the first by holdId when several), or null. */
  async holdOf(tenant: string, subjectId: string): Promise<LegalHold | null> {
    const holds = await this.many(
      this.keys.legalHoldsOfSubject(tenant, subjectId), (id) => this.keys.legalHold(tenant, id), (r) => LegalHold.parse(r), (h) => h.holdId,
    );
    return holds[0] ?? null;
  }

  /** The reason of the subject's legal hold (the first by holdId when several), or null. */
  async isOnHold(tenant: string, subjectId: string): Promise<string | null> {
    return (await this.holdOf(tenant, subjectId))?.reason ?? null;
  }

  async snapshot(tenant: string): Promise<PolicySnapshot> {
    return {
      tenant,
      revision: await this.revisions.current(tenant),
      grants: await this.grants(tenant),
      delegations: await this.delegations(tenant),
      revokedAgents: (await this.kv.smembers(this.keys.revokedAgentsOf(tenant))).sort(),
      legalHolds: await this.legalHolds(tenant),
    };
  }

  /** Tenants that ever had a policy change applied, sorted. */
  tenants = async () => (await this.kv.smembers(this.keys.policyTenants())).sort();

  /** sha256 over every tenant's snapshot and the live capability revocations. */
  async digest(): Promise<string> {
    const hash = createHash('sha256');
    for (const tenant of await this.tenants()) hash.update(`${JSON.stringify(await this.snapshot(tenant))}\n`);
    hash.update(`jti:${(await this.revocations.revokedCapabilities()).join(',')}\n`);
    return hash.digest('hex');
  }
}

/** `principalId`: whom the capability speaks for (absent in records written before it was kept: then nobody's own). */
export const IssuedCapability = z.object({ jti: z.string(), tenant: z.string(), agentId: z.string(), principalId: z.string().optional(), expiresAt: z.string() });
export type IssuedCapability = z.infer<typeof IssuedCapability>;

/**
 * The issuer's record of what it signed, kept until the capability expires: a revocation by
 * jti learns the capability's tenant (a caller revokes only its own tenant's) and expiry.
 */
export class IssuedCapabilities {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace, private readonly nowMs: () => number) {}

  async record(issued: IssuedCapability): Promise<void> {
    const ttlMs = Date.parse(issued.expiresAt) - this.nowMs();
    if (ttlMs > 0) await this.kv.set(this.keys.issuedCapability(issued.jti), JSON.stringify(issued), { ttlMs });
  }

  async get(jti: string): Promise<IssuedCapability | null> {
    const raw = await this.kv.get(this.keys.issuedCapability(jti));
    return raw === null ? null : IssuedCapability.parse(JSON.parse(raw));
  }
}
