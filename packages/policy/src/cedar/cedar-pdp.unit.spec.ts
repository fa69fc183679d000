import { beforeEach, describe, expect, it } from 'vitest';
import {
  Action, GovernedMemoryError,
  type CapabilityClaims, type Grant, type PolicySnapshot, type PolicySource, type ResourceRef, type Sensitivity,
} from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import { authorizesPartition } from '../pdp.ts';
import { CedarPolicyDecisionPoint } from './cedar-pdp.ts';
import { loadPolicySet } from './policy-set.ts';

const TENANT = 'tenant-acme';
const APOLLO: ResourceRef = { kind: 'project', id: 'apollo' };
const CASE_7: ResourceRef = { kind: 'case', id: 'case-7' };
const NOW = new Date('2025-03-01T09:00:00.000Z');
const MEMBER_ACTIONS = ['search', 'read', 'cite', 'write', 'request_delete'] as const;
const policySet = loadPolicySet();

const team = (resource: ResourceRef = APOLLO): string =>
  partitionKey({ tenantId: TENANT, resource, visibility: 'team', sensitivity: 'normal', ownerPrincipalId: 'unused' });
const privateOf = (owner: string, resource: ResourceRef = APOLLO): string =>
  partitionKey({ tenantId: TENANT, resource, visibility: 'private', sensitivity: 'normal', ownerPrincipalId: owner });
const restricted = (sensitivity: Sensitivity, resource: ResourceRef = APOLLO): string =>
  partitionKey({ tenantId: TENANT, resource, visibility: 'restricted', sensitivity, ownerPrincipalId: 'unused' });

const claims = (overrides: Partial<CapabilityClaims> = {}): CapabilityClaims => ({
  iss: 'gm-test-issuer',
  aud: 'governed-memory',
  sub: 'agent-scout',
  act: { sub: 'person-ana', kind: 'person' },
  tenant: TENANT,
  run: 'run-42',
  scopes: [APOLLO],
  purpose: 'support',
  actions: [...Action.options],
  exp: 1_740_820_500,
  iat: 1_740_819_600,
  rev: 1,
  jti: 'cap-1',
  ...overrides,
});

let grantSeq = 0;
const grant = (overrides: Partial<Grant> = {}): Grant => ({
  grantId: `grant-${++grantSeq}`,
  tenant: TENANT,
  principal: { id: 'person-ana', kind: 'person' },
  resource: APOLLO,
  role: 'member',
  purposes: ['support'],
  restricted: [],
  ...overrides,
});

type SnapshotDelegation = PolicySnapshot['delegations'][number];
const delegation = (overrides: Partial<SnapshotDelegation> = {}): SnapshotDelegation => ({
  delegationId: `delegation-${++grantSeq}`,
  tenant: TENANT,
  delegatorId: 'person-ana',
  agentId: 'agent-scout',
  resources: [APOLLO, CASE_7],
  purposes: ['support'],
  actions: [...Action.options],
  revoked: false,
  ...overrides,
});

/** The tenant's policy data, changed by tests the way policy.changes would: each change bumps the revision. */
class InMemoryPolicySource implements PolicySource {
  private current: PolicySnapshot = { tenant: TENANT, revision: 1, grants: [], delegations: [], revokedAgents: [], legalHolds: [] };

  async snapshot(tenant: string): Promise<PolicySnapshot> {
    return tenant === TENANT ? this.current : { tenant, revision: 0, grants: [], delegations: [], revokedAgents: [], legalHolds: [] };
  }

  change(data: Partial<Omit<PolicySnapshot, 'tenant' | 'revision'>>): void {
    this.current = { ...this.current, ...data, revision: this.current.revision + 1 };
  }
}

let source: InMemoryPolicySource;
let now: Date;
let pdp: CedarPolicyDecisionPoint;

beforeEach(() => {
  source = new InMemoryPolicySource();
  now = NOW;
  // Every request is checked against the schema here; services skip that check (it never
  // changes a decision — see the last test).
  pdp = new CedarPolicyDecisionPoint({ source, clock: { now: () => now }, policySet, validateRequests: true });
});

const authorized = (c: CapabilityClaims = claims(), action: Action = 'search') =>
  pdp.authorizedPartitions({ claims: c, action });

describe('CedarPolicyDecisionPoint: default deny (rule 1)', () => {
  it('allows nothing without a grant', async () => {
    for (const action of Action.options) expect(await authorized(claims(), action)).toEqual([]);
  });

  it('allows nothing on a grant of another principal, resource or tenant', async () => {
    source.change({
      grants: [
        grant({ principal: { id: 'person-bob', kind: 'person' } }),
        grant({ resource: CASE_7 }),
        grant({ tenant: 'tenant-globex' }),
      ],
    });
    expect(await authorized()).toEqual([]);
  });

  it('denies an action the capability does not carry, whatever the grants', async () => {
    source.change({ grants: [grant({ role: 'admin' }), grant({ role: 'manager', restricted: ['restricted'] })] });
    expect(await authorized(claims({ actions: ['read'] }), 'search')).toEqual([]);
    expect(await authorized(claims({ actions: ['search'] }), 'admin')).toEqual([]);
  });

  it('treats the capability scopes as a ceiling', async () => {
    source.change({ grants: [grant(), grant({ resource: CASE_7 })] });
    expect(await authorized(claims({ scopes: [APOLLO] }))).toEqual([privateOf('person-ana'), team()].sort());
    expect(await authorized(claims({ scopes: [CASE_7, APOLLO, CASE_7] }))).toEqual(
      [privateOf('person-ana'), team(), privateOf('person-ana', CASE_7), team(CASE_7)].sort(),
    );
  });
});

describe('member grant (rule 2)', () => {
  beforeEach(() => source.change({ grants: [grant()] }));

  it.each(MEMBER_ACTIONS)('%s: the team partition and the principal\'s own private partition', async (action) => {
    expect(await authorized(claims(), action)).toEqual([privateOf('person-ana'), team()].sort());
  });

  it.each(['promote', 'review', 'revoke', 'admin'] as const)('%s: nothing', async (action) => {
    expect(await authorized(claims(), action)).toEqual([]);
  });

  it('never reaches another principal\'s private partition or a restricted one', async () => {
    const partitions = await authorized(claims());
    expect(partitions).not.toContain(privateOf('person-bob'));
    expect(partitions).not.toContain(privateOf('agent-scout'));
    expect(partitions.filter((p) => p.includes('/v:restricted'))).toEqual([]);
  });

  it('is the principal\'s: an agent acting for itself has its own partitions only with its own grant', async () => {
    const self = claims({ act: { sub: 'agent-scout', kind: 'agent' } });
    expect(await authorized(self)).toEqual([]);
    source.change({ grants: [grant({ principal: { id: 'agent-scout', kind: 'agent' } })] });
    expect(await authorized(self)).toEqual([privateOf('agent-scout'), team()].sort());
  });

  it('authorizes a write into exactly those partitions', async () => {
    const write = (partition: string, c = claims()) => authorizesPartition(pdp, { claims: c, action: 'write' }, partition);
    expect(await write(team())).toBe(true);
    expect(await write(privateOf('person-ana'))).toBe(true);
    expect(await write(privateOf('person-bob'))).toBe(false);
    expect(await write(restricted('normal'))).toBe(false);
    expect(await write(team(CASE_7))).toBe(false);
    expect(await write(team(), claims({ actions: ['search'] }))).toBe(false);
  });
});

describe('reviewer grant (rule 3)', () => {
  beforeEach(() => source.change({ grants: [grant({ role: 'reviewer' })] }));

  it.each(['review', 'promote'] as const)('%s: the team partition and the reviewer\'s own private partition', async (action) => {
    expect(await authorized(claims(), action)).toEqual([privateOf('person-ana'), team()].sort());
  });

  it('gives no search, read or write: reviewing is not reading', async () => {
    for (const action of MEMBER_ACTIONS) expect(await authorized(claims(), action)).toEqual([]);
  });

  it('reviews a restricted partition only when the grant opens it', async () => {
    source.change({ grants: [grant({ role: 'reviewer', restricted: ['confidential'] })] });
    expect(await authorized(claims(), 'review')).toEqual([privateOf('person-ana'), restricted('confidential'), team()].sort());
  });
});

describe('manager grant (rule 4)', () => {
  beforeEach(() => source.change({ grants: [grant({ role: 'manager' })] }));

  it.each(MEMBER_ACTIONS)('%s: a member\'s partitions plus the confidential restricted one', async (action) => {
    expect(await authorized(claims(), action)).toEqual([privateOf('person-ana'), restricted('confidential'), team()].sort());
  });

  it('does not reach the normal or restricted sensitivities, nor review', async () => {
    const partitions = await authorized(claims());
    expect(partitions).not.toContain(restricted('normal'));
    expect(partitions).not.toContain(restricted('restricted'));
    expect(await authorized(claims(), 'review')).toEqual([]);
  });
});

describe('restricted partitions need an explicit grant (rule 5)', () => {
  it('opens exactly the sensitivities listed on the grant', async () => {
    source.change({ grants: [grant({ restricted: ['restricted', 'normal'] })] });
    expect(await authorized()).toEqual([privateOf('person-ana'), restricted('normal'), restricted('restricted'), team()].sort());
  });

  it('opens them on the grant\'s resource only', async () => {
    source.change({ grants: [grant({ restricted: ['restricted'] }), grant({ resource: CASE_7 })] });
    const partitions = await authorized(claims({ scopes: [APOLLO, CASE_7] }));
    expect(partitions).toContain(restricted('restricted'));
    expect(partitions).not.toContain(restricted('restricted', CASE_7));
  });

  it('gives a member nothing restricted without the list', async () => {
    source.change({ grants: [grant()] });
    for (const action of Action.options) {
      expect((await authorized(claims(), action)).filter((p) => p.includes('/v:restricted'))).toEqual([]);
    }
  });
});

describe('time-bounded grants (rule 6)', () => {
  const contractor = grant({ notBefore: '2025-03-01T08:00:00.000Z', notAfter: '2025-03-01T10:00:00+00:00' });
  beforeEach(() => source.change({ grants: [contractor] }));

  it('is void before notBefore and valid from it', async () => {
    now = new Date('2025-03-01T07:59:59.999Z');
    expect(await authorized()).toEqual([]);
    now = new Date('2025-03-01T08:00:00.000Z');
    expect(await authorized()).toEqual([privateOf('person-ana'), team()].sort());
  });

  it('is valid until just before notAfter and void from it on', async () => {
    now = new Date('2025-03-01T09:59:59.999Z');
    expect(await authorized()).toHaveLength(2);
    now = new Date('2025-03-01T10:00:00.000Z');
    expect(await authorized()).toEqual([]);
  });

  it('expires a cached decision at the bound, without a policy change', async () => {
    expect(await authorized()).toHaveLength(2);
    now = new Date('2025-03-01T11:00:00.000Z');
    expect(await authorized()).toEqual([]);
  });

  it('understands bounds written with an offset', async () => {
    source.change({ grants: [grant({ notAfter: '2025-03-01T10:00:00+01:00' })] }); // 09:00Z
    expect(await authorized()).toEqual([]);
  });
});

describe('admin grant (rule 7)', () => {
  beforeEach(() => source.change({ grants: [grant({ role: 'admin' })] }));

  it.each(['admin', 'revoke'] as const)('%s: every partition of the resource but other principals\' private ones', async (action) => {
    expect(await authorized(claims(), action)).toEqual(
      [privateOf('person-ana'), restricted('confidential'), restricted('normal'), restricted('restricted'), team()].sort(),
    );
  });

  it('reads nothing and administers nothing outside its resource', async () => {
    for (const action of [...MEMBER_ACTIONS, 'review', 'promote'] as const) expect(await authorized(claims(), action)).toEqual([]);
    expect(await authorized(claims({ scopes: [CASE_7] }), 'admin')).toEqual([]);
  });
});

describe('delegation (rule 8)', () => {
  const both = claims({ scopes: [APOLLO, CASE_7] });
  beforeEach(() => source.change({ grants: [grant(), grant({ resource: CASE_7 })] }));

  it('without a delegation record, the agent acts with the principal\'s grants', async () => {
    expect(await authorized(both)).toHaveLength(4);
  });

  it('narrows to the delegation\'s resources', async () => {
    source.change({ delegations: [delegation({ resources: [APOLLO] })] });
    expect(await authorized(both)).toEqual([privateOf('person-ana'), team()].sort());
  });

  it('narrows to the delegation\'s purposes', async () => {
    source.change({ grants: [grant({ purposes: ['support', 'billing'] })], delegations: [delegation({ purposes: ['billing'] })] });
    expect(await authorized(claims({ purpose: 'support' }))).toEqual([]);
    expect(await authorized(claims({ purpose: 'billing' }))).toHaveLength(2);
  });

  it('narrows to the delegation\'s actions', async () => {
    source.change({ delegations: [delegation({ actions: ['search'] })] });
    expect(await authorized(both, 'search')).toHaveLength(4);
    expect(await authorized(both, 'read')).toEqual([]);
    expect(await authorized(both, 'write')).toEqual([]);
  });

  it('never widens the principal\'s grants', async () => {
    source.change({ grants: [grant()], delegations: [delegation({ resources: [APOLLO, CASE_7], actions: [...Action.options] })] });
    expect(await authorized(both)).toEqual([privateOf('person-ana'), team()].sort());
    expect(await authorized(both, 'admin')).toEqual([]);
  });

  it('ends at the delegation\'s notAfter', async () => {
    source.change({ delegations: [delegation({ notAfter: '2025-03-01T09:30:00.000Z' })] });
    expect(await authorized(both)).toHaveLength(4);
    now = new Date('2025-03-01T09:30:00.000Z');
    expect(await authorized(both)).toEqual([]);
  });

  it('a revoked delegation denies the pair everything', async () => {
    source.change({ delegations: [delegation({ revoked: true })] });
    for (const action of Action.options) expect(await authorized(both, action)).toEqual([]);
  });

  it('the latest delegation of the pair decides', async () => {
    source.change({ delegations: [delegation({ revoked: true }), delegation()] });
    expect(await authorized(both)).toHaveLength(4);
    source.change({ delegations: [delegation(), delegation({ revoked: true })] });
    expect(await authorized(both)).toEqual([]);
  });

  it('applies to its own pair only', async () => {
    source.change({
      delegations: [delegation({ agentId: 'agent-other', revoked: true }), delegation({ delegatorId: 'person-bob', revoked: true })],
    });
    expect(await authorized(both)).toHaveLength(4);
  });

  it('does not apply to an agent acting for itself', async () => {
    source.change({
      grants: [grant({ principal: { id: 'agent-scout', kind: 'agent' } })],
      delegations: [delegation({ delegatorId: 'agent-scout', agentId: 'agent-scout', revoked: true })],
    });
    expect(await authorized(claims({ act: { sub: 'agent-scout', kind: 'agent' } }))).toEqual([privateOf('agent-scout'), team()].sort());
  });
});

describe('revoked agents (rule 9)', () => {
  beforeEach(() => source.change({ grants: [grant({ role: 'manager', restricted: ['restricted'] }), grant({ role: 'admin' })] }));

  it('a revoked agent gets nothing, for any action', async () => {
    source.change({ revokedAgents: ['agent-scout'] });
    for (const action of Action.options) expect(await authorized(claims(), action)).toEqual([]);
  });

  it('revoking another agent changes nothing for this one', async () => {
    source.change({ revokedAgents: ['agent-other'] });
    expect(await authorized()).toHaveLength(4);
  });

  it('an agent may not act for a revoked agent either', async () => {
    source.change({
      grants: [grant({ principal: { id: 'agent-boss', kind: 'agent' } })],
      revokedAgents: ['agent-boss'],
    });
    expect(await authorized(claims({ act: { sub: 'agent-boss', kind: 'agent' } }))).toEqual([]);
  });
});

describe('policy changes take effect at the next call (rule 10)', () => {
  it('a removed grant denies at once, after a cached allow', async () => {
    source.change({ grants: [grant()] });
    expect(await authorized()).toHaveLength(2);
    expect(await authorized()).toHaveLength(2); // now served from the decision cache
    source.change({ grants: [] });
    expect(await authorized()).toEqual([]);
  });

  it('a replaced role is the new role at once', async () => {
    source.change({ grants: [grant({ role: 'manager' })] });
    expect(await authorized()).toContain(restricted('confidential'));
    source.change({ grants: [grant({ role: 'reviewer' })] });
    expect(await authorized()).toEqual([]);
    expect(await authorized(claims(), 'review')).toEqual([privateOf('person-ana'), team()].sort());
  });

  it('a revoked delegation and a revoked agent deny at once', async () => {
    source.change({ grants: [grant()], delegations: [delegation()] });
    expect(await authorized()).toHaveLength(2);
    source.change({ delegations: [delegation({ revoked: true })] });
    expect(await authorized()).toEqual([]);
    source.change({ delegations: [delegation()] });
    expect(await authorized()).toHaveLength(2);
    source.change({ revokedAgents: ['agent-scout'] });
    expect(await authorized()).toEqual([]);
  });
});

describe('purpose (rule 11)', () => {
  it('a grant for support gives a billing capability nothing', async () => {
    source.change({ grants: [grant({ role: 'manager', purposes: ['support'] })] });
    for (const action of Action.options) expect(await authorized(claims({ purpose: 'billing' }), action)).toEqual([]);
    expect(await authorized(claims({ purpose: 'support' }))).toHaveLength(3);
  });

  it('any purpose of the grant will do; grants for different purposes do not mix', async () => {
    source.change({ grants: [grant({ purposes: ['billing', 'support'] }), grant({ role: 'manager', purposes: ['security'] })] });
    expect(await authorized(claims({ purpose: 'billing' }))).toEqual([privateOf('person-ana'), team()].sort());
    expect(await authorized(claims({ purpose: 'security' }))).toEqual([privateOf('person-ana'), restricted('confidential'), team()].sort());
  });
});

describe('grants add up', () => {
  it('member and reviewer grants together give both sets of rights', async () => {
    source.change({ grants: [grant(), grant({ role: 'reviewer', restricted: ['restricted'] })] });
    expect(await authorized(claims(), 'read')).toEqual([privateOf('person-ana'), team()].sort());
    expect(await authorized(claims(), 'promote')).toEqual([privateOf('person-ana'), restricted('restricted'), team()].sort());
  });

  it('decides the same without per-request schema validation (how services run it)', async () => {
    source.change({
      grants: [
        grant({ role: 'manager', restricted: ['normal'], notAfter: '2025-03-01T10:00:00Z' }),
        grant({ role: 'reviewer', resource: CASE_7, purposes: ['support', 'security'] }),
        grant({ role: 'admin', resource: CASE_7 }),
      ],
      delegations: [delegation({ resources: [APOLLO, CASE_7], actions: ['search', 'review', 'admin'] })],
    });
    const fast = new CedarPolicyDecisionPoint({ source, clock: { now: () => now }, policySet });
    for (const c of [claims({ scopes: [APOLLO, CASE_7] }), claims({ scopes: [APOLLO, CASE_7], purpose: 'security' }), claims({ sub: 'person-ana' })]) {
      for (const action of Action.options) {
        const request = { claims: c, action };
        expect(await fast.authorizedPartitions(request)).toEqual(await pdp.authorizedPartitions(request));
      }
    }
    expect(await fast.authorizedPartitions({ claims: claims({ scopes: [APOLLO, CASE_7] }), action: 'admin' })).toHaveLength(5);
  });

  it('refuses a policy source that answers for another tenant', async () => {
    const wrong: PolicySource = { snapshot: async () => ({ tenant: 'tenant-globex', revision: 1, grants: [], delegations: [], revokedAgents: [], legalHolds: [] }) };
    const confused = new CedarPolicyDecisionPoint({ source: wrong, clock: { now: () => NOW }, policySet });
    await expect(confused.authorizedPartitions({ claims: claims(), action: 'search' })).rejects.toBeInstanceOf(GovernedMemoryError);
  });
});

describe('CedarPolicyDecisionPoint: the tenant (rule 12)', () => {
  const TENANT_REF = { kind: 'tenant', id: TENANT } as const;
  const onTenant = (c: CapabilityClaims, action: Action) => pdp.authorizesTenant({ claims: c, action });
  const tenantScoped = (overrides: Partial<CapabilityClaims> = {}) => claims({ scopes: [APOLLO, TENANT_REF], ...overrides });

  it('gives tenant-wide admin only by an admin grant on the tenant, to a capability scoped to it', async () => {
    source.change({ grants: [grant({ role: 'admin' })] });
    // An admin of a resource (even a made-up one) is no administrator of the tenant.
    expect(await onTenant(tenantScoped(), 'admin')).toBe(false);
    source.change({ grants: [grant({ role: 'admin' }), grant({ resource: TENANT_REF, role: 'admin' })] });
    expect(await onTenant(tenantScoped(), 'admin')).toBe(true);
    // The capability is the ceiling: without the tenant among its scopes, or without the action, nothing.
    expect(await onTenant(claims(), 'admin')).toBe(false);
    expect(await onTenant(tenantScoped({ actions: ['search', 'request_delete'] }), 'admin')).toBe(false);
    // The tenant opens no partition: its grant gives nothing on a resource.
    source.change({ grants: [grant({ resource: TENANT_REF, role: 'admin' })] });
    expect(await pdp.authorizedPartitions({ claims: tenantScoped(), action: 'admin' })).toEqual([]);
  });

  it('lets a privacy officer forget across the tenant and nothing else', async () => {
    source.change({ grants: [grant({ resource: TENANT_REF, role: 'privacy_officer' })] });
    expect(await onTenant(tenantScoped(), 'request_delete')).toBe(true);
    expect(await onTenant(tenantScoped(), 'admin')).toBe(false);
    for (const action of Action.options) expect(await pdp.authorizedPartitions({ claims: tenantScoped(), action })).toEqual([]);
  });

  it('refuses a grant on the tenant for another purpose, another principal, after its end, or through a delegation', async () => {
    source.change({ grants: [grant({ resource: TENANT_REF, role: 'privacy_officer', purposes: ['compliance'] })] });
    expect(await onTenant(tenantScoped(), 'request_delete')).toBe(false);
    expect(await onTenant(tenantScoped({ purpose: 'compliance' }), 'request_delete')).toBe(true);
    expect(await onTenant(tenantScoped({ purpose: 'compliance', act: { sub: 'person-bob', kind: 'person' } }), 'request_delete')).toBe(false);
    source.change({ grants: [grant({ resource: TENANT_REF, role: 'privacy_officer', notAfter: '2025-03-01T08:00:00.000Z' })] });
    expect(await onTenant(tenantScoped(), 'request_delete')).toBe(false);
    // A delegated agent never gets the tenant's rights, whatever its delegation says.
    source.change({ grants: [grant({ resource: TENANT_REF, role: 'privacy_officer' })], delegations: [delegation()] });
    expect(await onTenant(tenantScoped(), 'request_delete')).toBe(false);
    expect(await onTenant(tenantScoped({ sub: 'person-ana' }), 'request_delete')).toBe(true);
  });

  it('never answers for another tenant than the capability\'s', async () => {
    source.change({ grants: [grant({ resource: TENANT_REF, role: 'admin' })] });
    expect(await onTenant(tenantScoped({ scopes: [APOLLO, { kind: 'tenant', id: 'tenant-globex' }] }), 'admin')).toBe(false);
  });
});
