import { z } from 'zod';
import { LIMITS } from './limits.ts';
import {
  Content, Id, IsoTime, MemoryKind, Principal, Purpose, ResourceRef, Sensitivity, Sha256Hex, Trust, Visibility,
} from './primitives.ts';

export const ProvenanceSource = z.enum(['user', 'tool', 'review', 'import']);

export const Provenance = z
  .object({
    source: ProvenanceSource,
    uri: z.string().max(2048).optional(),
    eventId: Id.optional(),
    observedAt: IsoTime,
  })
  .strict();
export type Provenance = z.infer<typeof Provenance>;

export const RecordStatus = z.enum([
  'quarantined', 'active', 'superseded', 'expired', 'revocation_pending', 'tombstoned', 'purged',
]);
export type RecordStatus = z.infer<typeof RecordStatus>;

/** The record of design §2 without its content: what projections, logs and workers carry. */
export const RecordMeta = z
  .object({
    id: Id,
    tenantId: Id,
    agentId: Id,
    subjectId: Id,
    owner: Principal,
    resource: ResourceRef,
    visibility: Visibility,
    sensitivity: Sensitivity,
    purposes: z.array(Purpose).min(1).max(LIMITS.maxPurposes),
    kind: MemoryKind,
    contentHash: Sha256Hex,
    provenance: z.array(Provenance).min(1).max(LIMITS.maxProvenance),
    trust: Trust,
    confidence: z.number().min(0).max(1),
    createdAt: IsoTime,
    expiresAt: IsoTime,
    version: z.number().int().min(1),
    status: RecordStatus,
    supersedesId: Id.optional(),
    supersededById: Id.optional(),
    legalHold: z.boolean().optional(),
    policyRevision: z.number().int().min(0),
  })
  .strict();
export type RecordMeta = z.infer<typeof RecordMeta>;

/**
 * The `contentHash` of a purged record: the hash goes with the content (design §8.4), so the
 * record hash keeps no plain hash of what was erased. 64 zeros hash nothing anyone wrote.
 */
export const ERASED_CONTENT_HASH = '0'.repeat(64);

/**
 * Provenance without what names its source (`uri`, `eventId`): `crm://patients/jane-…/oncology`
 * is about the subject as much as the content is. What an erased record keeps, and what the log
 * keeps in clear beside the sealed original (design §8.4, §8.5); the kind of source and when it
 * was observed stay, so the schema's shape does.
 */
export const erasedProvenance = (provenance: readonly Provenance[]): Provenance[] =>
  provenance.map(({ source, observedAt }) => ({ source, observedAt }));

export const MemoryRecord = RecordMeta.extend({ content: Content });
export type MemoryRecord = z.infer<typeof MemoryRecord>;

