import type { AcceptedResult, RecordMeta, TombstoneReason } from '@gm/contracts';

export interface RecordState {
  meta: RecordMeta;
  /** Kept only while quarantined, so a promotion can hand the content to the index. */
  pendingContent?: string;
  /**
   * Where the quarantined write's MemoryWritten event lies (its offset in the subject's
   * memory.events partition). write-admission's snapshots keep this instead of the content, so
   * no store outside the log ever holds it; a promotion reads the content back from there.
   */
  pendingAt?: number;
  /** Set once a deletion job owns the record. */
  deletion?: { jobId: string; reason: TombstoneReason };
}

/** The state of one aggregate: every record about one subject of one tenant. */
export interface SubjectState {
  records: Record<string, RecordState>;
  /**
   * Idempotency slot (`idempotencySlot`: tenant, principal, agent and key) → first result, when
   * it was produced, and the fingerprint of the request that produced it (absent for keyless
   * slots and for slots older than fingerprints).
   */
  idempotency: Record<string, { result: AcceptedResult; at: string; requestHash?: string }>;
  /**
   * The generation of the subject's key-encryption key new records are sealed under (absent = 1).
   * Each forget starts the next one: the forget's key target destroys the old generation.
   */
  keyGeneration?: number;
}

export const initialState = (): SubjectState => ({ records: {}, idempotency: {} });
