import { describe, expect, it } from 'vitest';
import type { Visibility } from '@gm/contracts';
import { isWidening, partitionKey, type PartitionParts } from './partition.ts';

const parts = (overrides: Partial<PartitionParts> = {}): PartitionParts => ({
  tenantId: 'tenant-acme',
  resource: { kind: 'project', id: 'apollo' },
  visibility: 'team',
  sensitivity: 'normal',
  ownerPrincipalId: 'person-ana',
  ...overrides,
});

describe('partitionKey (§1: tenant / resource / visibility)', () => {
  it('gives each owner its own private partition', () => {
    const ana = partitionKey(parts({ visibility: 'private', ownerPrincipalId: 'person-ana' }));
    const bob = partitionKey(parts({ visibility: 'private', ownerPrincipalId: 'person-bob' }));
    expect(ana).not.toBe(bob);
  });

  it('shares one team partition among all owners of a resource', () => {
    expect(partitionKey(parts({ ownerPrincipalId: 'person-ana' }))).toBe(partitionKey(parts({ ownerPrincipalId: 'person-bob' })));
  });

  it('splits restricted partitions by sensitivity, not by owner', () => {
    const confidential = partitionKey(parts({ visibility: 'restricted', sensitivity: 'confidential' }));
    const restricted = partitionKey(parts({ visibility: 'restricted', sensitivity: 'restricted' }));
    expect(confidential).not.toBe(restricted);
    expect(partitionKey(parts({ visibility: 'restricted', sensitivity: 'confidential', ownerPrincipalId: 'person-bob' }))).toBe(confidential);
  });

  it('never mixes visibilities, tenants or resources, even same-named ones', () => {
    const keys = [
      partitionKey(parts({ visibility: 'team' })),
      partitionKey(parts({ visibility: 'private' })),
      partitionKey(parts({ visibility: 'restricted' })),
      partitionKey(parts({ tenantId: 'tenant-other' })),
      partitionKey(parts({ resource: { kind: 'case', id: 'apollo' } })),
      partitionKey(parts({ resource: { kind: 'project', id: 'apollo-2' } })),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('isWidening (§5.3: widening is a reviewed promotion)', () => {
  const order: Visibility[] = ['private', 'restricted', 'team'];

  it('orders visibility private < restricted < team', () => {
    for (const [i, from] of order.entries()) {
      for (const [j, to] of order.entries()) {
        expect(isWidening(from, to), `${from} → ${to}`).toBe(j > i);
      }
    }
  });
});
