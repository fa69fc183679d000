import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { b64u, fromB64u, toB64u } from './base64url.ts';
import { IV_BYTES, KEY_BYTES, TAG_BYTES, openGcm, sealGcm, type SecretKey } from './envelope.ts';

/**
 * Key ids say which key, never what it protects: a KEK id is a hash of tenant, subject and
 * generation (subject ids may be personal data, e.g. an e-mail; each forget starts a new
 * generation); a data key id names tenant, record id (a ULID) and a generation, so a record
 * can be re-keyed.
 */
export function kekId(tenantId: string, subjectId: string, generation = 1): string {
  if (!Number.isInteger(generation) || generation < 1) throw new RangeError('generation must be a positive integer');
  const digest = createHash('sha256').update(JSON.stringify(['gm.kek.v1', tenantId, subjectId, generation]), 'utf8').digest('base64url');
  return `kek:${digest}`;
}

export function dataKeyId(tenantId: string, recordId: string, generation = 1): string {
  if (!Number.isInteger(generation) || generation < 1) throw new RangeError('generation must be a positive integer');
  return `dk:${tenantId}/${recordId}/${generation}`;
}

export const isKekId = (kid: string): boolean => kid.startsWith('kek:');

/**
 * The "record id" of the data key that seals write-admission's snapshots of a subject's key
 * generation (sealing/snapshot-sealer.ts): the KEK id's digest behind `~adm~`, which no record id
 * holds (ids have no `~`), so it names no subject and collides with no record.
 */
export const snapshotKeyRecordId = (tenantId: string, subjectId: string, generation: number): string =>
  `~adm~${kekId(tenantId, subjectId, generation).slice('kek:'.length)}`;

/** Whether a data key id is a snapshot key's: it protects no record, and never keeps its KEK alive (shred.ts). */
export const isSnapshotDataKeyId = (kid: string): boolean => kid.startsWith('dk:') && kid.includes('/~adm~');

export const generateKey = (kid: string): SecretKey => ({ kid, key: randomBytes(KEY_BYTES) });

/**
 * A key as the key store holds it: sealed with the key one level up. A KEK is wrapped by a
 * master key (`wrappedBy` = master key id), a data key by its subject's KEK (`wrappedBy` =
 * KEK id). The AAD is the key's own id, so a wrapped key cannot be stored under another id.
 */
export const WrappedKey = z
  .object({
    v: z.literal(1),
    /** `tk`: a transit key (commands, sealing/transit.ts), wrapped by a master key like a KEK. */
    kind: z.enum(['kek', 'dk', 'tk']),
    kid: z.string().min(1),
    wrappedBy: z.string().min(1),
    iv: b64u(IV_BYTES),
    ct: b64u(KEY_BYTES),
    tag: b64u(TAG_BYTES),
  })
  .strict();
export type WrappedKey = z.infer<typeof WrappedKey>;

const wrapAad = (kind: WrappedKey['kind'], kid: string): Buffer => Buffer.from(JSON.stringify(['gm.wrap.v1', kind, kid]), 'utf8');

export function wrapKey(kind: WrappedKey['kind'], key: SecretKey, wrapping: SecretKey): WrappedKey {
  const sealed = sealGcm(key.key, wrapping.key, wrapAad(kind, key.kid));
  return { v: 1, kind, kid: key.kid, wrappedBy: wrapping.kid, iv: toB64u(sealed.iv), ct: toB64u(sealed.ct), tag: toB64u(sealed.tag) };
}

/** The key, or CryptoError AUTH_FAILED when `wrapping` is not the key that wrapped it. */
export function unwrapKey(wrapped: WrappedKey, wrapping: SecretKey): SecretKey {
  const key = openGcm(
    { iv: fromB64u(wrapped.iv), ct: fromB64u(wrapped.ct), tag: fromB64u(wrapped.tag) },
    wrapping.key,
    wrapAad(wrapped.kind, wrapped.kid),
    `${wrapped.kind} ${wrapped.kid} under ${wrapping.kid}`,
  );
  return { kid: wrapped.kid, key };
}
