import { z } from 'zod';
import { LIMITS } from './limits.ts';
import { MessageMetadata, RejectionReason, Version } from './messages.ts';
import {
  CallerEmbedding, Content, Id, IsoTime, MemoryKind, Principal, Purpose, ResourceRef, Sensitivity, Sha256Hex, Trust, Visibility,
} from './primitives.ts';
import { Provenance } from './record.ts';

const command = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({ type: z.literal(type), data, metadata: MessageMetadata }).strict();

export const WriteMemoryData = z
  .object({
    id: Id,
    expectedVersion: Version,
    owner: Principal,
    resource: ResourceRef,
    visibility: Visibility,
    sensitivity: Sensitivity,
    purposes: z.array(Purpose).min(1).max(LIMITS.maxPurposes),
    kind: MemoryKind,
    content: Content,
    contentHash: Sha256Hex,
    provenance: z.array(Provenance).min(1).max(LIMITS.maxProvenance),
    trust: Trust,
    confidence: z.number().min(0).max(1),
    expiresAt: IsoTime.optional(),
    supersedesId: Id.optional(),
    /** The caller's embedding of `content`, checked against the runtime's model and normalised at the edge; sealed with the content. */
    embedding: CallerEmbedding.optional(),
  })
  .strict();
export type WriteMemoryData = z.infer<typeof WriteMemoryData>;

const ById = z.object({ id: Id }).strict();
const ByIdVersioned = z.object({ id: Id, expectedVersion: Version }).strict();
const ByIdJob = z.object({ id: Id, jobId: Id }).strict();

export const WriteMemory = command('WriteMemory', WriteMemoryData);
export const PromoteMemory = command('PromoteMemory', ByIdVersioned.extend({ visibility: Visibility.optional() }));
export const RejectQuarantined = command('RejectQuarantined', ByIdVersioned.extend({ reason: RejectionReason.optional() }));
export const ExpireMemory = command('ExpireMemory', ById);
export const RevokeMemory = command('RevokeMemory', ByIdJob);
/**
 * `copies`: the other records of the subject holding the same content that the requester may
 * delete (the edge checked each): deleted in the same job where they still are live and hold it.
 */
export const DeleteMemory = command(
  'DeleteMemory', ByIdJob.extend({ copies: z.array(Id).min(1).max(LIMITS.maxDeletionCopies).optional() }),
);
/**
 * What a forget may take (design §8.1): the records of the subject in these partitions — the
 * ones the requester may delete, as the edge's policy decision point answered — or, for a
 * privacy officer (`request_delete` on the tenant), every record of the subject in the tenant.
 */
export const ForgetWithin = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('tenant') }).strict(),
  z.object({ kind: z.literal('partitions'), partitions: z.array(z.string().min(1).max(2048)).max(LIMITS.maxForgetPartitions) }).strict(),
]);
export type ForgetWithin = z.infer<typeof ForgetWithin>;
export const ForgetSubject = command('ForgetSubject', z.object({ jobId: Id, within: ForgetWithin }).strict());
/** Internal: sent by the deletion-orchestrator once a job owns the record. */
export const TombstoneMemory = command('TombstoneMemory', ByIdJob);
/** Internal: sent by the deletion-orchestrator when every target acknowledged the purge. */
export const PurgeMemory = command('PurgeMemory', ByIdJob);

export const MemoryCommand = z.discriminatedUnion('type', [
  WriteMemory, PromoteMemory, RejectQuarantined, ExpireMemory, RevokeMemory, DeleteMemory, ForgetSubject,
  TombstoneMemory, PurgeMemory,
]);
export type MemoryCommand = z.infer<typeof MemoryCommand>;
export type MemoryCommandType = MemoryCommand['type'];
export type CommandOf<T extends MemoryCommandType> = Extract<MemoryCommand, { type: T }>;

/** Commands that only services may send; the HTTP edge never forwards them from a caller. */
export const INTERNAL_COMMANDS: readonly MemoryCommandType[] = ['ExpireMemory', 'TombstoneMemory', 'PurgeMemory'];

