/**
 * The deletion job as a workflow (§8): what can happen to a job (inputs), the facts its stored
 * state is folded from, and the work a decision asks the orchestrator to send. Time is always an
 * argument (`now`), and a legal hold is read by the caller and passed in: the decider does no IO.
 */
import type {
  DeletionEvidence, DeletionJob, DeletionResidual, DeletionTarget, DeletionTask,
} from '@gm/contracts';

/** The hold that applies to the job's subject now, as read by the orchestrator; `null` when none. */
export type HoldNow = { holdId: string; reason?: string } | null;

/** What the deployment sets: the copies it keeps and the job's clocks. */
export interface DeletionSettings {
  /** Every copy this deployment keeps; each must acknowledge (`deletionTargetsOf`). */
  targets: readonly DeletionTarget[];
  deadlineMs: number;
  verifyRetryMs: number;
  /** A job with no progress for this long re-sends what its state still needs. */
  resendAfterMs: number;
}

/** A revocation, deletion or forget, as its memory event asked for it. */
export interface DeletionRequest {
  jobId: string;
  tenant: string;
  subjectId: string;
  recordIds: string[];
  mode: DeletionJob['mode'];
  /** Records an earlier revocation tombstoned already: they go straight to fan-out. */
  alreadyTombstoned: string[];
  requestedBy: DeletionJob['requestedBy'];
  requestedAt: string;
  policyRevision: number;
}

export type DeletionInput =
  | { type: 'RequestDeletion'; now: string; request: DeletionRequest; hold: HoldNow }
  /** The hold that kept `held`'s content was released: a new job `jobId` purges what it kept. */
  | {
    type: 'ContinueAfterRelease'; now: string; jobId: string; held: DeletionJob; holdId: string;
    requestedBy: DeletionJob['requestedBy']; requestedAt: string; hold: HoldNow;
  }
  | { type: 'MarkContinued'; by: string }
  | { type: 'RecordTombstoned'; now: string; recordId: string; hold: HoldNow }
  | { type: 'TargetAcknowledged'; now: string; target: DeletionTarget; evidence: DeletionEvidence; hold: HoldNow }
  | {
    type: 'VerificationReported'; now: string; evidence: DeletionEvidence; findings: string[];
    residual: DeletionResidual[]; hold: HoldNow;
  }
  | { type: 'TimePassed'; now: string };

/** The facts a job's stored state is folded from (`evolveDeletion`). */
export type DeletionFact =
  | { type: 'JobOpened'; job: DeletionJob }
  | { type: 'RecordTombstoned'; recordId: string; at: string }
  /** A hold placed since the job opened: from here on nothing more of the content is removed. */
  | { type: 'HoldSeen'; hold: { holdId: string; reason?: string } }
  | { type: 'TargetDone'; evidence: DeletionEvidence; at: string }
  | { type: 'VerificationStarted'; at: string }
  | { type: 'VerificationFound'; evidence: DeletionEvidence; findings: string[]; residual: DeletionResidual[]; retryAt: string; at: string }
  | { type: 'VerificationPassed'; evidence: DeletionEvidence; residual: DeletionResidual[]; at: string }
  | { type: 'ShreddingStarted' }
  | { type: 'VerificationRetried'; at: string }
  | { type: 'JobResumed'; at: string }
  | { type: 'JobVerified'; at: string }
  | { type: 'JobFailed'; reason: string; cause: 'deadline' | 'target_failed'; while: DeletionJob['status']; at: string }
  | { type: 'JobContinued'; by: string };

/** What the orchestrator sends for a decision, built from the job as the decision left it. */
export type DeletionWork =
  | { type: 'TombstoneMemory' | 'PurgeMemory'; recordId: string }
  | { type: 'Task'; target: DeletionTask['target'] }
  /** The alert's copy on `deletion.tasks.dlq`: the job failed `while` in that status. */
  | { type: 'DeadLetter'; reason: string; while: DeletionJob['status'] };

export interface DeletionDecision {
  facts: DeletionFact[];
  work: DeletionWork[];
}
