import type { RecordMeta, ResourceRef, Sensitivity, Visibility } from '@gm/contracts';

/**
 * A partition is the unit the policy decision point authorises and the index searches
 * (design §1): tenant / resource / visibility, plus the owner for `private` (only its owner
 * principal may read it) and the sensitivity for `restricted`.
 */
export interface PartitionParts {
  tenantId: string;
  resource: ResourceRef;
  visibility: Visibility;
  sensitivity: Sensitivity;
  ownerPrincipalId: string;
}

export function partitionKey(p: PartitionParts): string {
  const base = `t:${p.tenantId}/r:${p.resource.kind}:${p.resource.id}`;
  switch (p.visibility) {
    case 'team':
      return `${base}/v:team`;
    case 'private':
      return `${base}/v:private/o:${p.ownerPrincipalId}`;
    case 'restricted':
      return `${base}/v:restricted/s:${p.sensitivity}`;
    default: {
      const never: never = p.visibility;
      throw new Error(`unknown visibility ${String(never)}`);
    }
  }
}

/** How many principals can see a visibility: widening it is a reviewed promotion (§5.3). */
export const VISIBILITY_WIDTH: Record<Visibility, number> = { private: 0, restricted: 1, team: 2 };

export const isWidening = (from: Visibility, to: Visibility): boolean => VISIBILITY_WIDTH[to] > VISIBILITY_WIDTH[from];

/** The partition a record lives in: what every index of it is filtered by. */
export const recordPartition = (m: Pick<RecordMeta, 'tenantId' | 'resource' | 'visibility' | 'sensitivity' | 'owner'>): string =>
  partitionKey({ tenantId: m.tenantId, resource: m.resource, visibility: m.visibility, sensitivity: m.sensitivity, ownerPrincipalId: m.owner.principalId });
