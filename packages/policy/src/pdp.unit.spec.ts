import { describe, expect, it } from 'vitest';
import { Action, type CapabilityClaims, type ResourceRef } from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import { ScopePolicyDecisionPoint } from './pdp.ts';

const APOLLO: ResourceRef = { kind: 'project', id: 'apollo' };
const CASE_7: ResourceRef = { kind: 'case', id: 'case-7' };

const claims = (overrides: Partial<CapabilityClaims> = {}): CapabilityClaims => ({
  iss: 'gm-test-issuer',
  aud: 'governed-memory',
  sub: 'agent-scout',
  act: { sub: 'person-ana', kind: 'person' },
  tenant: 'tenant-acme',
  run: 'run-42',
  scopes: [APOLLO],
  purpose: 'support',
  actions: ['search', 'read'],
  exp: 1_740_820_500,
  iat: 1_740_819_600,
  nbf: 1_740_819_600,
  rev: 3,
  jti: 'cap-1',
  ...overrides,
});

const team = (tenantId: string, resource: ResourceRef): string =>
  partitionKey({ tenantId, resource, visibility: 'team', sensitivity: 'normal', ownerPrincipalId: 'unused' });
const privateOf = (tenantId: string, resource: ResourceRef, owner: string): string =>
  partitionKey({ tenantId, resource, visibility: 'private', sensitivity: 'normal', ownerPrincipalId: owner });

const pdp = new ScopePolicyDecisionPoint();
const authorized = (c: CapabilityClaims, action: Action = 'search') => pdp.authorizedPartitions({ claims: c, action, policyRevision: c.rev });

describe('ScopePolicyDecisionPoint (§6.2, default deny)', () => {
  it('returns exactly the team partition and the caller\'s own private partition of its scope', async () => {
    expect(await authorized(claims())).toEqual(
      [team('tenant-acme', APOLLO), privateOf('tenant-acme', APOLLO, 'person-ana')].sort(),
    );
  });

  it('gives an agent acting for itself its own private partition', async () => {
    const self = claims({ act: { sub: 'agent-scout', kind: 'agent' } });
    expect(await authorized(self)).toContain(privateOf('tenant-acme', APOLLO, 'agent-scout'));
  });

  it('never returns another principal\'s private partition', async () => {
    const partitions = await authorized(claims());
    for (const other of ['person-bob', 'agent-scout', 'person-ana-2', 'person']) {
      expect(partitions).not.toContain(privateOf('tenant-acme', APOLLO, other));
    }
    expect(partitions.filter((p) => p.includes('/v:private/'))).toEqual([privateOf('tenant-acme', APOLLO, 'person-ana')]);
  });

  it('never returns a restricted partition, whatever the actions', async () => {
    const everything = claims({ actions: [...Action.options], scopes: [APOLLO, CASE_7] });
    for (const action of Action.options) {
      const partitions = await authorized(everything, action);
      expect(partitions.length).toBeGreaterThan(0);
      expect(partitions.some((p) => p.includes('/v:restricted'))).toBe(false);
      for (const sensitivity of ['normal', 'confidential', 'restricted'] as const) {
        const restricted = partitionKey({ tenantId: 'tenant-acme', resource: APOLLO, visibility: 'restricted', sensitivity, ownerPrincipalId: 'person-ana' });
        expect(partitions).not.toContain(restricted);
      }
    }
  });

  it.each(Action.options.filter((a) => a !== 'search' && a !== 'read'))('denies everything for an action not granted (%s)', async (action) => {
    expect(await authorized(claims(), action)).toEqual([]);
  });

  it('denies everything when the capability grants a different action only', async () => {
    expect(await authorized(claims({ actions: ['write'] }), 'search')).toEqual([]);
  });

  it('returns four sorted, unique partitions for two scopes', async () => {
    const partitions = await authorized(claims({ scopes: [APOLLO, CASE_7] }));
    expect(partitions).toHaveLength(4);
    expect(new Set(partitions).size).toBe(4);
    expect(partitions).toEqual([...partitions].sort());
    expect(partitions).toEqual(
      [
        team('tenant-acme', APOLLO), privateOf('tenant-acme', APOLLO, 'person-ana'),
        team('tenant-acme', CASE_7), privateOf('tenant-acme', CASE_7, 'person-ana'),
      ].sort(),
    );
  });

  it('does not care about the order of scopes and collapses a repeated scope', async () => {
    const forward = await authorized(claims({ scopes: [APOLLO, CASE_7] }));
    expect(await authorized(claims({ scopes: [CASE_7, APOLLO] }))).toEqual(forward);
    expect(await authorized(claims({ scopes: [CASE_7, APOLLO, CASE_7, APOLLO] }))).toEqual(forward);
  });

  it('keeps same-named resources of different kinds apart', async () => {
    const projectX: ResourceRef = { kind: 'project', id: 'x' };
    const caseX: ResourceRef = { kind: 'case', id: 'x' };
    expect(await authorized(claims({ scopes: [projectX] }))).not.toContain(team('tenant-acme', caseX));
    expect(await authorized(claims({ scopes: [projectX, caseX] }))).toHaveLength(4);
  });

  it('never returns a partition of another tenant', async () => {
    const partitions = await authorized(claims({ scopes: [APOLLO, CASE_7] }));
    for (const p of partitions) expect(p.startsWith('t:tenant-acme/')).toBe(true);
    for (const other of ['tenant-globex', 'tenant-acme-2', 'tenant']) {
      expect(partitions).not.toContain(team(other, APOLLO));
      expect(partitions).not.toContain(privateOf(other, APOLLO, 'person-ana'));
    }
    const globex = await authorized(claims({ tenant: 'tenant-globex', scopes: [APOLLO, CASE_7] }));
    expect(globex.filter((p) => partitions.includes(p))).toEqual([]);
  });
});
