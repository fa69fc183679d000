import { z } from 'zod';
import { Actor } from './capability.ts';
import { Id, IsoTime, Sha256Hex, SubjectId } from './primitives.ts';

/**
 * Metadata every command and event carries. `now` is the time the command was accepted at
 * the edge: deciders never read a clock, so replay gives the same events.
 */
export const MessageMetadata = z
  .object({
    commandId: Id,
    tenantId: Id,
    subjectId: SubjectId,
    actor: Actor,
    now: IsoTime,
    idempotencyKey: Id.optional(),
    /**
     * sha256 of what the caller asked, beside its idempotency key (write-edge `requestFingerprint`):
     * a key used again for another request is refused (MEM_IDEMPOTENCY_MISMATCH) instead of being
     * answered with the first request's result.
     */
    requestHash: Sha256Hex.optional(),
    policyRevision: z.number().int().min(0),
    /** Answered asynchronously (202): write-admission's reply asks for its outcome to be kept for GET /v1/commands/{commandId}. */
    storeOutcome: z.literal(true).optional(),
    /** Sent by the ingest-gateway for a memory.ingest request: write-admission answers on the tenant's results topic (ingestResultsTopic) under this key instead of memory.replies. */
    ingestRequestId: Id.optional(),
  })
  .strict();
export type MessageMetadata = z.infer<typeof MessageMetadata>;

export const Version = z.number().int().min(0);
export const TombstoneReason = z.enum(['revoked', 'deleted', 'forgotten', 'rejected']);
export type TombstoneReason = z.infer<typeof TombstoneReason>;
/**
 * Why a reviewer rejected a quarantined write: a fixed code, never free text, so the event, the
 * history and the logs keep a decision and no words of anyone's (a free-text reason could quote
 * the content it rejects).
 */
export const RejectionReason = z.enum(['injected-instruction', 'inaccurate', 'sensitive', 'duplicate', 'out-of-scope', 'other']);
export type RejectionReason = z.infer<typeof RejectionReason>;
export const DeletionMode = z.enum(['revoke', 'delete']);
export type DeletionMode = z.infer<typeof DeletionMode>;
