/**
 * The shapes the console reads and sends: the API's own contracts, as types only (nothing of
 * zod reaches the bundle), so a change of the API is a type error here.
 */
import type { DeletionJobListQuery, MemoryRecord, RejectionReason, Visibility } from '@gm/contracts';

export type {
  Action, CapabilityClaims, DeletionEvidence, DeletionJob, DeletionJobList, DeletionReceipt, EvidencePacket, MemoryRecord, MutationResponse,
  OpsOverview, Problem, ReceiptPublicKey, ReceiptResponse, RejectionReason, Visibility,
} from '@gm/contracts';

// Records keyed by the enum: a value added to the contract is a type error until listed here.
const VISIBILITY: Record<Visibility, true> = { private: true, team: true, restricted: true };
export const VISIBILITIES = Object.keys(VISIBILITY) as Visibility[];

/** The listing's status filter (`?status=`), as DeletionJobListQuery accepts it. */
export type JobStatusFilter = NonNullable<DeletionJobListQuery['status']>;
const JOB_STATUS_FILTER: Record<JobStatusFilter, true> = { invalidating: true, verifying: true, verified: true, failed: true };
export const JOB_STATUS_FILTERS = Object.keys(JOB_STATUS_FILTER) as JobStatusFilter[];

/** GET /v1/review/quarantine: the record metadata with its content, in the caller's partitions. */
export interface QuarantineList {
  items: MemoryRecord[];
}

/** Why a reviewer rejects (`POST /v1/memories/{id}/reject` `reason`), each with what the console says of it. */
export const REJECTION_REASONS: Record<RejectionReason, string> = {
  'injected-instruction': 'reads as an instruction to the agent',
  inaccurate: 'not true, or not what the source says',
  sensitive: 'should not be remembered at all',
  duplicate: 'already remembered',
  'out-of-scope': 'not about this subject or purpose',
  other: 'another reason',
};
export const REJECTION_REASON_CODES = Object.keys(REJECTION_REASONS) as RejectionReason[];
