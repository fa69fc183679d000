import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { b64u, fromB64u, toB64u } from './base64url.ts';
import { IV_BYTES, KEY_BYTES, TAG_BYTES, openGcm, sealGcm, type SecretKey } from './envelope.ts';

/**
 * Key ids say which key, never what it protects. A KEK id is a keyed digest (HMAC-SHA-256 under
 * the deployment's pseudonym key) of tenant, subject and generation: subject ids may be personal
 * data (an e-mail), and a plain hash of a guessable id would confirm a guess to anyone reading
 * the key store's files, destroyed markers included (docs/security.md). Each forget starts a new
 * generation. A data key id names tenant, record id (a ULID) and a generation, so a record can
 * be re-keyed. KEKs made before keyed ids keep their plain-hash ids (`gm.kek.v1`) and stay
 * readable: a data key names its KEK, and nothing derives an old id again.
 */
export function kekId(pseudonymKey: SecretKey, tenantId: string, subjectId: string, generation = 1): string {
  if (!Number.isInteger(generation) || generation < 1) throw new RangeError('generation must be a positive integer');
  return `kek:${keyedDigest(pseudonymKey, ['gm.kek.v2', tenantId, subjectId, generation])}`;
}

/** The one keyed encoding of ids: HMAC-SHA-256 of their JSON array (injective), base64url. */
export function keyedDigest(key: SecretKey, parts: ReadonlyArray<string | number>): string {
  return createHmac('sha256', key.key).update(JSON.stringify(parts), 'utf8').digest('base64url');
}

/**
 * The pseudonym key's id in the key store. One per deployment; kept wrapped under the master key
 * like a KEK (rotations re-wrap it), never destroyed: every keyed id depends on it.
 */
export const PSEUDONYM_KEY_ID = 'pk:subjects:v1';

/**
 * The pseudonym key as it is made the first time: derived (HKDF) from the active master key, not
 * drawn at random. The key store has no compare-and-set, and every instance of a new deployment
 * may create it at once; derived, they all create the same key, so whichever put lands last
 * changes nothing. Stored, it no longer depends on that master key staying configured.
 */
export function derivePseudonymKey(master: SecretKey): SecretKey {
  return { kid: PSEUDONYM_KEY_ID, key: Buffer.from(hkdfSync('sha256', master.key, Buffer.alloc(0), 'gm.pseudonym-key.v1', KEY_BYTES)) };
}

export function dataKeyId(tenantId: string, recordId: string, generation = 1): string {
  if (!Number.isInteger(generation) || generation < 1) throw new RangeError('generation must be a positive integer');
  return `dk:${tenantId}/${recordId}/${generation}`;
}

export const isKekId = (kid: string): boolean => kid.startsWith('kek:');

/**
 * The "record id" of the data key that seals write-admission's snapshots of a subject's key
 * generation (sealing/snapshot-sealer.ts): the KEK id's keyed digest behind `~adm~`, which no
 * record id holds (ids have no `~`), so it names no subject and collides with no record.
 */
export const snapshotKeyRecordId = (pseudonymKey: SecretKey, tenantId: string, subjectId: string, generation: number): string =>
  `~adm~${kekId(pseudonymKey, tenantId, subjectId, generation).slice('kek:'.length)}`;

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
    /** `tk`: a transit key (commands, sealing/transit.ts); `pk`: the pseudonym key (PSEUDONYM_KEY_ID). Both wrapped by a master key like a KEK. */
    kind: z.enum(['kek', 'dk', 'tk', 'pk']),
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
