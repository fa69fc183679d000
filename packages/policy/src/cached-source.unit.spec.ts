import { describe, expect, it } from 'vitest';
import type { PolicySnapshot } from '@gm/contracts';
import { RevisionCachedPolicySource } from './cached-source.ts';

const snapshot = (revision: number, grantIds: string[]): PolicySnapshot => ({
  tenant: 'acme', revision, delegations: [], revokedAgents: [], legalHolds: [],
  grants: grantIds.map((grantId) => ({
    grantId, tenant: 'acme', principal: { id: 'alice', kind: 'person' }, resource: { kind: 'project', id: 'maple' }, role: 'member', purposes: ['support'], restricted: [],
  })),
});

describe('RevisionCachedPolicySource', () => {
  it('re-reads the snapshot exactly when the revision moved, so a change is seen on the next request', async () => {
    let revision = 1;
    let reads = 0;
    const cached = new RevisionCachedPolicySource(
      { snapshot: async () => ((reads += 1), snapshot(revision, revision === 1 ? ['g1'] : ['g2'])) },
      { current: async () => revision },
    );
    expect((await cached.snapshot('acme')).grants.map((g) => g.grantId)).toEqual(['g1']);
    expect((await cached.snapshot('acme')).grants.map((g) => g.grantId)).toEqual(['g1']);
    expect(reads).toBe(1);
    revision = 2;
    expect((await cached.snapshot('acme')).grants.map((g) => g.grantId)).toEqual(['g2']);
    expect(reads).toBe(2);
  });
});
