/**
 * The shapes the console reads and sends: the API's own contracts, as types only (nothing of
 * zod reaches the bundle), so a change of the API is a type error here.
 */
import type { DeletionJobListQuery, MemoryRecord, Visibility } from '@gm/contracts';

export type {
  Action, CapabilityClaims, DeletionEvidence, DeletionJob, DeletionJobList, DeletionReceipt, MemoryRecord, MutationResponse,
  OpsOverview, Problem, ReceiptPublicKey, ReceiptResponse, Visibility,
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
