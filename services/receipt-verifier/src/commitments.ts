import { ERASED_CONTENT_HASH, type ContentCommitment } from '@gm/contracts';
import { commitToHash, newOpening } from '@gm/policy/receipt-commitments';
import type { StateStore } from '@gm/state-store';

/**
 * How long a job's openings are kept for its requester (design §8.4): it fetches them with its
 * receipt (`GET /v1/deletion-jobs/{id}/receipt`) and keeps them itself. Past this, the receipt
 * still verifies, but nobody here can open its commitments any more.
 */
export const OPENING_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Commits to the content of the job's records whose sha256 is known here and not yet committed
 * (a random opening per record per job, kept with its commitment for OPENING_TTL_MS), and
 * returns every commitment kept for the job. Called by the verification pass, which reads the
 * hashes from the event log before the keys are destroyed, and again when the receipt is
 * built, with the record state's hashes (a job that failed before its replays still has them).
 * The first commitment of a record wins, so repeating either changes nothing.
 */
export async function commitContents(state: StateStore, tenant: string, jobId: string, hashes: ReadonlyMap<string, string>): Promise<void> {
  const kept = await state.receipts.openings(tenant, jobId, [...hashes.keys()]);
  const fresh = [...hashes]
    .filter(([recordId, sha256]) => !kept.has(recordId) && sha256 !== ERASED_CONTENT_HASH)
    .map(([recordId, sha256]) => {
      const opening = newOpening();
      return { recordId, opening, commitment: commitToHash(opening, sha256) };
    });
  await state.receipts.keepOpenings(tenant, jobId, fresh, OPENING_TTL_MS);
}

/** The receipt's `contentCommitments`: one per job record, `null` where no hash was ever known. */
export async function receiptCommitments(
  state: StateStore, tenant: string, jobId: string, recordIds: readonly string[], stateHashes: ReadonlyMap<string, string>,
): Promise<ContentCommitment[]> {
  await commitContents(state, tenant, jobId, stateHashes);
  const kept = await state.receipts.openings(tenant, jobId, recordIds);
  return recordIds.map((recordId) => ({ recordId, commitment: kept.get(recordId)?.commitment ?? null }));
}
