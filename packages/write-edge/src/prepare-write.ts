/**
 * The rules of a write at the edge (§5.2, §5.3), for POST /v1/memories, its batch form and
 * memory.ingest alike: who writes comes from the capability, where it writes must be in scope
 * and granted, and it tags its own purpose. Everything past these is write-admission's
 * (versions, TTL, supersession, quarantine).
 */
import { createHash } from 'node:crypto';
import { GovernedMemoryError, type CapabilityClaims, type Clock, type MemoryCommand, type WriteMemoryRequest } from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import { newUlid } from '@gm/ids';
import { authorizesPartition, inScope, type PolicyDecisionPoint } from '@gm/policy';
import type { StateStore } from '@gm/state-store';
import { metadataAt } from './metadata.ts';

/** What the edge of a write reads: the policy decision point, the clock, id claims and policy revisions. */
export interface WriteEdgeDeps {
  pdp: PolicyDecisionPoint;
  clock: Clock;
  state: Pick<StateStore, 'idClaims' | 'policyRevisions'>;
}

/** Whether this capability may write to a partition: the policy decision point asked once per distinct partition. */
export type WritePermission = (partition: string) => Promise<boolean>;

export function writePermission(deps: Pick<WriteEdgeDeps, 'pdp'>, claims: CapabilityClaims): WritePermission {
  const decided = new Map<string, Promise<boolean>>();
  return (partition) => {
    let decision = decided.get(partition);
    if (decision === undefined) {
      decision = authorizesPartition(deps.pdp, { claims, action: 'write' }, partition);
      decided.set(partition, decision);
    }
    return decision;
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
  deps: Pick<WriteEdgeDeps, 'clock'>, claims: CapabilityClaims, body: WriteMemoryRequest, idempotencyKey: string | undefined,
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
      },
      metadata: metadataAt(deps.clock, claims, body.subjectId, idempotencyKey, policyRevision, { operation: 'WriteMemory', body }),
    },
  };
}

/** The error an id claimed for another subject gets. */
export const idTaken = (): GovernedMemoryError => new GovernedMemoryError('MEM_ID_TAKEN', 'this id is in use for another subject');
