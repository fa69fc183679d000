import type { DeletionAck, MemoryEvent } from '@gm/contracts';
import type { DeletionInput, DeletionRequest, HoldNow } from '@gm/domain';

/**
 * The deletion a memory event asks for (a revocation, deletion or forget), or undefined for any
 * other event. One reading for the orchestrator, which opens jobs from the events as they come,
 * and for the restore, which folds them from the log after the job store was lost.
 */
export function deletionRequestOf(event: MemoryEvent): DeletionRequest | undefined {
  const m = event.metadata;
  const common = {
    tenant: m.tenantId, subjectId: m.subjectId,
    requestedBy: { agentId: m.actor.agentId, principalId: m.actor.principalId }, requestedAt: m.now, policyRevision: m.policyRevision,
  };
  switch (event.type) {
    case 'MemoryRevocationRequested':
      return {
        ...common, jobId: event.data.jobId, mode: event.data.mode,
        recordIds: [event.data.id, ...(event.data.copies ?? []).map((c) => c.id)],
        alreadyTombstoned: event.data.alreadyTombstoned ? [event.data.id] : [],
      };
    case 'SubjectForgotten':
      return {
        ...common, jobId: event.data.jobId, mode: 'forget',
        recordIds: event.data.records.map((r) => r.id),
        alreadyTombstoned: event.data.records.filter((r) => r.alreadyTombstoned).map((r) => r.id),
      };
    default:
      return undefined;
  }
}

/** An ack of a copy's removal or of a verification; the receipt-verifier answers a `receipt` task with the receipt itself, never an ack. */
export type TargetAck = DeletionAck & { target: Exclude<DeletionAck['target'], 'receipt'> };
export const isTargetAck = (ack: DeletionAck): ack is TargetAck => ack.target !== 'receipt';

/** A target's acknowledgement as the decider's input; `now` and `hold` are the caller's reading. */
export function deletionInputOfAck(ack: TargetAck, now: string, hold: HoldNow): DeletionInput {
  const { target, evidence } = ack;
  return target === 'verification'
    ? { type: 'VerificationReported', now, evidence, findings: ack.findings ?? [], residual: ack.residual ?? [], hold }
    : { type: 'TargetAcknowledged', now, target, evidence, hold };
}
