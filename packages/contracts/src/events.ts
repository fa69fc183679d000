import { z } from 'zod';
import { DeletionMode, MessageMetadata, TombstoneReason } from './messages.ts';
import { Content, Id, Trust, Visibility } from './primitives.ts';
import { MemoryRecord, RecordMeta } from './record.ts';

const EventMetadata = MessageMetadata.extend({ eventId: Id });
export type EventMetadata = z.infer<typeof EventMetadata>;

const event = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ type: z.literal(type), data, metadata: EventMetadata }).strict();

const Versioned = z.object({ id: Id, version: z.number().int().min(1) }).strict();

/**
 * `keyGeneration` (absent = 1): which generation of the subject's key-encryption key protects
 * the record's content in the log. Each SubjectForgotten starts a new generation, so a write
 * after a forget is never sealed under the key the forget is about to destroy.
 */
export const MemoryWritten = event(
  'MemoryWritten',
  z.object({ record: MemoryRecord, keyGeneration: z.number().int().min(2).optional() }).strict(),
);
/**
 * Carries the promoted record's new state, and its content when it leaves quarantine, so
 * the index-builder can index it without reading another service's store — each consumer
 * stays a fold of the log.
 */
export const MemoryPromoted = event(
  'MemoryPromoted',
  Versioned.extend({ visibility: Visibility, trust: Trust, record: RecordMeta, content: Content.optional() }),
);
export const MemorySuperseded = event('MemorySuperseded', Versioned.extend({ supersededById: Id }));
export const MemoryExpired = event('MemoryExpired', Versioned);
/**
 * `alreadyTombstoned`: the record was revoked earlier (tombstoned, content retained for audit)
 * and is now being deleted or forgotten — it stays tombstoned and its content gets purged.
 */
const AlreadyTombstoned = z.object({ alreadyTombstoned: z.literal(true).optional() });
/**
 * `copies`: other live records of the subject with the same content, deleted in the same job
 * (`DELETE ?scope=content`); each goes to `revocation_pending` at its own version.
 */
export const MemoryRevocationRequested = event(
  'MemoryRevocationRequested',
  Versioned.extend({ jobId: Id, mode: DeletionMode, copies: z.array(Versioned).min(1).optional() }).extend(AlreadyTombstoned.shape),
);
export const SubjectForgotten = event(
  'SubjectForgotten',
  z
    .object({
      jobId: Id,
      records: z.array(Versioned.extend(AlreadyTombstoned.shape)),
      /** The key generation this forget retires (absent in logs older than issue 7); writes after it use the next. */
      keyGeneration: z.number().int().min(1).optional(),
    })
    .strict(),
);
export const MemoryTombstoned = event(
  'MemoryTombstoned',
  Versioned.extend({ jobId: Id.optional(), reason: TombstoneReason }),
);
export const MemoryPurged = event('MemoryPurged', Versioned.extend({ jobId: Id }));

export const MemoryEvent = z.discriminatedUnion('type', [
  MemoryWritten, MemoryPromoted, MemorySuperseded, MemoryExpired, MemoryRevocationRequested, SubjectForgotten,
  MemoryTombstoned, MemoryPurged,
]);
export type MemoryEvent = z.infer<typeof MemoryEvent>;
export type MemoryEventType = MemoryEvent['type'];
export type EventOf<T extends MemoryEventType> = Extract<MemoryEvent, { type: T }>;
