import { z } from 'zod';
import { Id, IsoTime, PrincipalKind } from './primitives.ts';
import { MemoryEvent, type MemoryEventType } from './events.ts';
import { RejectionReason } from './messages.ts';
import { RecordMeta, RecordStatus } from './record.ts';

/**
 * One version of a record as the projector folded it (docs/api.md): the record's metadata after
 * the event, when the event happened and who caused it. Never content, nor its hash: history
 * outlives an erasure, and a hash of erased content would let anyone confirm a guess of it.
 */
const EVENT_TYPES = MemoryEvent.options.map((o) => o.shape.type.value) as [MemoryEventType, ...MemoryEventType[]];

/**
 * Present on the version a reviewer's rejection made, with the reviewer's reason code when one
 * was given: a code, never free text.
 */
export const Rejection = z.object({ reason: RejectionReason.optional() }).strict();
export type Rejection = z.infer<typeof Rejection>;

export const StoredRecordVersion = z
  .object({
    event: z.enum(EVENT_TYPES),
    at: IsoTime,
    by: z.object({ agentId: Id, principalId: Id, principalKind: PrincipalKind }).strict(),
    record: RecordMeta.omit({ contentHash: true }),
    rejection: Rejection.optional(),
  })
  .strict();
export type StoredRecordVersion = z.infer<typeof StoredRecordVersion>;

/** A version in `GET /v1/memories/{id}/history`. */
export const RecordVersion = StoredRecordVersion.shape.record
  .pick({
    version: true, status: true, visibility: true, sensitivity: true, resource: true, purposes: true, trust: true, confidence: true,
    expiresAt: true, provenance: true, supersedesId: true, supersededById: true, legalHold: true, policyRevision: true,
  })
  .extend({ event: StoredRecordVersion.shape.event, at: IsoTime, by: StoredRecordVersion.shape.by, rejection: Rejection.optional() });
export type RecordVersion = z.infer<typeof RecordVersion>;

/** A record of the supersession chain, oldest first. */
export const SupersessionLink = z.object({ id: Id, status: RecordStatus, version: z.number().int().min(1), createdAt: IsoTime });
export type SupersessionLink = z.infer<typeof SupersessionLink>;

export const RecordHistory = z.object({
  id: Id,
  status: RecordStatus,
  version: z.number().int().min(1),
  /** The versions this reader may see, oldest first. */
  versions: z.array(RecordVersion),
  /**
   * The records this one superseded and was superseded by, oldest first, this one included.
   * The walk stops at the first record this reader may not see, in either direction.
   */
  chain: z.array(SupersessionLink),
});
export type RecordHistory = z.infer<typeof RecordHistory>;
