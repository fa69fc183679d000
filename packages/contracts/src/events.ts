import { z } from 'zod';
import { GovernedMemoryError } from './errors.ts';
import { DeletionMode, MessageMetadata, RejectionReason, TombstoneReason } from './messages.ts';
import { CallerEmbedding, Content, Id, Trust, Visibility } from './primitives.ts';
import { MemoryRecord, RecordMeta } from './record.ts';

const EventMetadata = MessageMetadata.extend({ eventId: Id });
export type EventMetadata = z.infer<typeof EventMetadata>;

const event = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ type: z.literal(type), data, metadata: EventMetadata }).strict();

const Versioned = z.object({ id: Id, version: z.number().int().min(1) }).strict();

/**
 * `keyGeneration` (absent = 1): which generation of the subject's key-encryption key protects
 * the record's content in the log. Each SubjectForgotten starts a new generation, so a write
 * after a forget is never sealed under the key the forget is about to destroy. `embedding`: the
 * writer's own vector of the content (its model's), sealed with the content; the vector-indexer
 * indexes it instead of embedding the content while the deployment's model is that one.
 */
export const MemoryWritten = event(
  'MemoryWritten',
  z.object({ record: MemoryRecord, keyGeneration: z.number().int().min(2).optional(), embedding: CallerEmbedding.optional() }).strict(),
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
      /** The key generation this forget retires (absent in logs older than content encryption); writes after it use the next. */
      keyGeneration: z.number().int().min(1).optional(),
    })
    .strict(),
);
/** `rejectionReason`: with reason `rejected`, the code the reviewer gave (absent when none was given). */
export const MemoryTombstoned = event(
  'MemoryTombstoned',
  Versioned.extend({ jobId: Id.optional(), reason: TombstoneReason, rejectionReason: RejectionReason.optional() }),
);
export const MemoryPurged = event('MemoryPurged', Versioned.extend({ jobId: Id }));

export const MemoryEvent = z.discriminatedUnion('type', [
  MemoryWritten, MemoryPromoted, MemorySuperseded, MemoryExpired, MemoryRevocationRequested, SubjectForgotten,
  MemoryTombstoned, MemoryPurged,
]);
export type MemoryEvent = z.infer<typeof MemoryEvent>;
export type MemoryEventType = MemoryEvent['type'];
export type EventOf<T extends MemoryEventType> = Extract<MemoryEvent, { type: T }>;

/**
 * The one policy for a message of memory.events that is not a memory event this version reads
 * (a type a newer write-admission writes, a damaged log, a foreign writer): every reader stops at
 * it. Skipping it — or dead-lettering it, which is skipping with a record — would leave the
 * reader's state without an effect the writer meant (a purge, a supersession) and the readers'
 * states apart. So it throws a retriable MEM_UNAVAILABLE: consumer groups retry it without limit
 * (their lag grows and the retry warning names the offset), write-admission's fold and the
 * verifier's reads fail the same way, and a replay stops with the offset. Upgrading the reader
 * (or repairing the log) lets every one of them go on from there.
 */
export function readMemoryEvent(message: { topic: string; partition: number; offset: number; value: unknown }): MemoryEvent {
  const parsed = MemoryEvent.safeParse(message.value);
  if (parsed.success) return parsed.data;
  const value = message.value as { type?: unknown } | null;
  // The type names what arrived; nothing else of the value (it may carry content).
  const type = typeof value?.type === 'string' && /^[A-Za-z]{1,64}$/.test(value.type) ? ` (type "${value.type}")` : '';
  throw new GovernedMemoryError(
    'MEM_UNAVAILABLE',
    `${message.topic}[${message.partition}]@${message.offset}${type} is not a memory event this version reads; readers stop here until it is upgraded or the log repaired`,
    { retriable: true },
  );
}
