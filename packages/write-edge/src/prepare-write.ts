/**
 * The rules of a write at the edge (§5.2, §5.3), for POST /v1/memories, its batch form and
 * memory.ingest alike: who writes comes from the capability, where it writes must be in scope
 * and granted, and it tags its own purpose. Everything past these is write-admission's
 * (versions, TTL, supersession, quarantine).
 */
import { createHash } from 'node:crypto';
import { GovernedMemoryError, type CapabilityClaims, type Clock, type MemoryCommand, type WriteMemoryRequest } from '@gm/contracts';
import { acceptCallerEmbedding, partitionKey, type EmbeddingTarget } from '@gm/domain';
import { newUlid } from '@gm/ids';
import { inScope, type PolicyDecisionPoint } from '@gm/policy';
import type { StateStore } from '@gm/state-store';
import { metadataAt } from './metadata.ts';

/** What the edge of a write reads: the policy decision point, the clock, id claims and policy revisions. */
export interface WriteEdgeDeps {
  clock: Clock;
  state: Pick<StateStore, 'idClaims' | 'policyRevisions' | 'records' | 'tombstones'>;
  /** The model the runtime's vectors are of, which a write's own embedding must match; absent where no vectors are kept. */
  semantic?: { model: EmbeddingTarget };
}

/**
 * Whether this capability may write to a partition for a purpose (default: its own). Its own
 * purpose is answered from the partitions the edge's policy decision point opened for `write`
 * (the authorization table's answer); another purpose a record is tagged with is asked once
 * per purpose, as if the capability carried it: the writer must hold it on the resource (§5.3).
 */
export type WritePermission = (partition: string, purpose?: string) => Promise<boolean>;

export function writeAuthority(pdp: PolicyDecisionPoint, claims: CapabilityClaims, partitions: readonly string[]): WritePermission {
  const open = new Set(partitions);
  const other = new Map<string, Promise<Set<string>>>();
  return async (partition, purpose = claims.purpose) => {
    if (purpose === claims.purpose) return open.has(partition);
    let opened = other.get(purpose);
    if (opened === undefined) {
      opened = pdp.authorizedPartitions({ claims: { ...claims, purpose }, action: 'write' }).then((p) => new Set(p));
      other.set(purpose, opened);
    }
    return (await opened).has(partition);
  };
}

/** A checked write: its command, ready to send once its id is claimed for its subject. */
export interface PreparedWrite {
  command: MemoryCommand & { type: 'WriteMemory' };
  id: string;
  subjectId: string;
}

/** The command of a write body, or the coded error of the first edge rule it breaks. */
export async function prepareWrite(
  deps: Pick<WriteEdgeDeps, 'clock' | 'semantic'>, claims: CapabilityClaims, body: WriteMemoryRequest, idempotencyKey: string | undefined,
  mayWrite: WritePermission, policyRevision: number,
): Promise<PreparedWrite> {
  const owner = { principalId: claims.act.sub, kind: claims.act.kind };
  // §5.2: who writes comes from the capability; naming anyone else is impersonation.
  if ((body.tenantId !== undefined && body.tenantId !== claims.tenant) || (body.agentId !== undefined && body.agentId !== claims.sub)) {
    throw new GovernedMemoryError('MEM_IMPERSONATION', 'the body names another tenant or agent than the capability');
  }
  if (body.owner && (body.owner.principalId !== owner.principalId || body.owner.kind !== owner.kind)) {
    throw new GovernedMemoryError('MEM_IMPERSONATION', 'the body names another owner than the capability\'s principal');
  }
  if (!inScope(claims, body.resource)) throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'the resource is outside the capability\'s scopes');
  // §5.3: a writer creates only where a grant lets it write (restricted partitions need an explicit one).
  const target = partitionKey({
    tenantId: claims.tenant, resource: body.resource, visibility: body.visibility, sensitivity: body.sensitivity, ownerPrincipalId: owner.principalId,
  });
  if (!(await mayWrite(target))) throw new GovernedMemoryError('MEM_FORBIDDEN', 'no grant lets this capability write to that partition');
  const purposes = body.purposes ?? [claims.purpose];
  if (!purposes.includes(claims.purpose)) {
    throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'a writer must tag its own purpose among the record\'s purposes');
  }
  // A purpose puts the record in front of that purpose's readers: only one the writer holds there.
  for (const purpose of new Set(purposes)) {
    if (purpose !== claims.purpose && !(await mayWrite(target, purpose))) {
      throw new GovernedMemoryError('MEM_VALIDATION', `purposes: the writer holds no grant to write for "${purpose}" in that partition`);
    }
  }
  // Checked before anything is sent: a vector of another model would be indexed as meaningless.
  const embedding = body.embedding === undefined ? undefined : { model: body.embedding.model, vector: acceptCallerEmbedding(body.embedding, deps.semantic?.model) };
  const id = body.id ?? newUlid();
  return {
    id,
    subjectId: body.subjectId,
    command: {
      type: 'WriteMemory',
      data: {
        id,
        expectedVersion: body.expectedVersion,
        owner,
        resource: body.resource,
        visibility: body.visibility,
        sensitivity: body.sensitivity,
        purposes,
        kind: body.kind,
        content: body.content,
        contentHash: createHash('sha256').update(body.content, 'utf8').digest('hex'),
        provenance: body.provenance,
        trust: body.trust,
        confidence: body.confidence,
        ...(body.expiresAt === undefined ? {} : { expiresAt: body.expiresAt }),
        ...(body.supersedesId === undefined ? {} : { supersedesId: body.supersedesId }),
        ...(embedding === undefined ? {} : { embedding }),
      },
      metadata: metadataAt(deps.clock, claims, body.subjectId, idempotencyKey, policyRevision, { operation: 'WriteMemory', body }),
    },
  };
}


