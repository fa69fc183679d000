import { z } from 'zod';
import { LIMITS } from './limits.ts';

/**
 * Ids are opaque to us but bounded and printable, so they are safe in keys and logs. `.` and
 * `..` are not ids: in a path they are the segments every client and proxy collapses, so such a
 * record could be written but never addressed.
 */
export const Id = z
  .string()
  .min(1)
  .max(LIMITS.maxIdLength)
  .regex(/^(?!\.{1,2}$)[A-Za-z0-9._:@-]+$/, 'ids may contain letters, digits and . _ : @ - only, and are not "." or ".."');
export type Id = z.infer<typeof Id>;

/**
 * What a purged record keeps in place of its subject id (design §8.4): the record hash keeps that
 * an id was used and purged, not whom it was about. An id, so the record's shape stays; refused
 * as a subject id (SubjectId), so no live record ever has it.
 */
export const ERASED_SUBJECT_ID = '.erased';

/** A subject id: an `Id` other than ERASED_SUBJECT_ID. */
export const SubjectId = z
  .string()
  .min(1)
  .max(LIMITS.maxIdLength)
  .regex(/^(?!\.{1,2}$)(?!\.erased$)[A-Za-z0-9._:@-]+$/, 'subject ids may contain letters, digits and . _ : @ - only, and are not ".", ".." or ".erased" (what a purged record keeps in place of its subject)');

/**
 * A tenant id (design §2): 1–64 letters, digits and `. _ -`, starting with a letter or digit —
 * narrower than `Id`, so a tenant never holds a separator (`:`, `/`, `@`). Enforced where tenants
 * are born: capability issue, and every capability's claims. Store keys stay injective for any
 * string whatever (one encoding, @gm/ids `keyOf`); this grammar is defense in depth and keeps
 * tenant ids readable in keys, logs and partition keys.
 */
export const TenantId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'tenant ids are 1–64 letters, digits and . _ - (starting with a letter or digit)');
export type TenantId = z.infer<typeof TenantId>;

export const IsoTime = z.iso.datetime({ offset: true });
export type IsoTime = z.infer<typeof IsoTime>;

export const PrincipalKind = z.enum(['person', 'team', 'service', 'agent']);
export type PrincipalKind = z.infer<typeof PrincipalKind>;

export const Principal = z.object({ principalId: Id, kind: PrincipalKind }).strict();
export type Principal = z.infer<typeof Principal>;

export const ResourceKind = z.enum(['project', 'case', 'workspace']);
export const ResourceRef = z.object({ kind: ResourceKind, id: Id }).strict();
export type ResourceRef = z.infer<typeof ResourceRef>;

/**
 * The tenant as a whole, for what is not about one resource (design §6.2): tenant-wide
 * administration (legal holds, agent revocation, every deletion job, the ops overview) and the
 * erasure of a data subject across every resource. A grant on it and a capability scope naming
 * it are both needed; records never belong to it.
 */
export const TenantRef = z.object({ kind: z.literal('tenant'), id: Id }).strict();
export type TenantRef = z.infer<typeof TenantRef>;

/** What a capability may be scoped to and a grant given on: a resource, or its own tenant. */
export const ScopeRef = z.discriminatedUnion('kind', [ResourceRef, TenantRef]);
export type ScopeRef = z.infer<typeof ScopeRef>;
export const isTenantRef = (scope: ScopeRef): scope is TenantRef => scope.kind === 'tenant';

export const Visibility = z.enum(['private', 'team', 'restricted']);
export type Visibility = z.infer<typeof Visibility>;

export const Sensitivity = z.enum(['normal', 'confidential', 'restricted']);
export type Sensitivity = z.infer<typeof Sensitivity>;

export const Purpose = z.string().min(1).max(64).regex(/^[a-z][a-z0-9_-]*$/, 'purposes are lower-case words');
export type Purpose = z.infer<typeof Purpose>;

export const MemoryKind = z.enum(['working_note', 'fact', 'skill', 'preference']);
export type MemoryKind = z.infer<typeof MemoryKind>;

export const Trust = z.enum(['untrusted', 'trusted', 'verified']);
export type Trust = z.infer<typeof Trust>;

/** What a writer may claim: `verified` is granted by a reviewed promotion only, never written. */
export const WriteTrust = Trust.exclude(['verified'], { error: 'a writer claims "untrusted" or "trusted"; "verified" is granted by promotion only' });
export type WriteTrust = z.infer<typeof WriteTrust>;

export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/** UTF-8 byte length; the 32 KiB bound of §5.1 is on bytes, not UTF-16 units. */
export function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

export const Content = z
  .string()
  .min(1)
  .refine((s) => utf8Length(s) <= 32 * 1024, { message: 'content exceeds 32 KiB' });

/**
 * An embedding computed by the caller, of a query or of a write's content: accepted only from the
 * model the runtime embeds with, by its id and dimensions (§6.7). Derived from content, so a
 * write's is sealed with it on the log and goes with its key.
 */
export const CallerEmbedding = z
  .object({
    model: z.string().min(1).max(200),
    vector: z.array(z.number().finite()).min(1).max(4096),
  })
  .strict();
export type CallerEmbedding = z.infer<typeof CallerEmbedding>;

/**
 * What a consumer of memory.commands / memory.events finds in place of content it cannot or
 * may not read (the log itself holds sealed envelopes, §8.5):
 * - ERASED_CONTENT: the key was destroyed (forgotten subject, deleted record): erased for good;
 * - SEALED_CONTENT: the service reads metadata only and holds no content keys.
 * Both pass `Content` so events keep their shape; consumers that index or probe content skip them.
 */
export const ERASED_CONTENT = '\u0000gm:erased';
export const SEALED_CONTENT = '\u0000gm:sealed';
export const isUnreadableContent = (content: string | undefined): boolean =>
  content === ERASED_CONTENT || content === SEALED_CONTENT;
