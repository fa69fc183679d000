import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { b64u, fromB64u, toB64u } from './base64url.ts';
import { CryptoError } from './errors.ts';

export const KEY_BYTES = 32;
export const IV_BYTES = 12;
export const TAG_BYTES = 16;

/** An unwrapped key in memory: its id and its 32 bytes. Never serialised, never logged. */
export interface SecretKey {
  readonly kid: string;
  readonly key: Buffer;
}

/**
 * What replaces a record's content in commands and events. `kid` names the data key; the
 * ciphertext is bound (AAD) to the record it belongs to, so it cannot be moved to another.
 * `v` says what the plaintext is: 1, the bare content (logs written before the hashes were
 * sealed); 2, the content codec's JSON payload (content and the hashes that would confirm a
 * guess of it, design §8.5). The version is bound too, so neither reads as the other.
 */
export const Envelope = z
  .object({
    v: z.union([z.literal(1), z.literal(2)]),
    kid: z.string().min(1),
    iv: b64u(IV_BYTES),
    ct: b64u(),
    tag: b64u(TAG_BYTES),
  })
  .strict();
export type Envelope = z.infer<typeof Envelope>;
export type EnvelopeVersion = Envelope['v'];

/** The record a ciphertext belongs to. A new version re-encrypts; an old envelope stays bound to its version. */
export interface ContentAad {
  tenantId: string;
  subjectId: string;
  recordId: string;
  version: number;
}

/* A JSON array, not a joined string: no separator inside an id can make two records collide. */
const contentAad = (v: EnvelopeVersion, kid: string, aad: ContentAad): Buffer =>
  Buffer.from(JSON.stringify([`gm.content.v${v}`, kid, aad.tenantId, aad.subjectId, aad.recordId, aad.version]), 'utf8');

/** Low-level AES-256-GCM with a fresh random 96-bit IV; shared by content and key wrapping. */
export function sealGcm(plaintext: Uint8Array, key: Buffer, aad: Buffer): { iv: Buffer; ct: Buffer; tag: Buffer } {
  if (key.length !== KEY_BYTES) throw new CryptoError('AUTH_FAILED', `an AES-256 key has ${KEY_BYTES} bytes, got ${key.length}`);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, ct, tag: cipher.getAuthTag() };
}

/** Opens what sealGcm made; any change to the bytes, the key or the AAD fails with AUTH_FAILED. */
export function openGcm(sealed: { iv: Buffer; ct: Buffer; tag: Buffer }, key: Buffer, aad: Buffer, what: string): Buffer {
  if (key.length !== KEY_BYTES || sealed.iv.length !== IV_BYTES || sealed.tag.length !== TAG_BYTES) {
    throw new CryptoError('AUTH_FAILED', `${what}: malformed key, iv or tag`);
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ct), decipher.final()]);
  } catch (cause) {
    throw new CryptoError('AUTH_FAILED', `${what}: authentication failed (tampered, wrong key, or bound to another id)`, { cause });
  }
}

/** `v`: what the plaintext is (see Envelope); 1, bare content, unless the caller seals a v2 payload. */
export function encryptContent(plaintext: string, dataKey: SecretKey, aad: ContentAad, v: EnvelopeVersion = 1): Envelope {
  const sealed = sealGcm(Buffer.from(plaintext, 'utf8'), dataKey.key, contentAad(v, dataKey.kid, aad));
  return { v, kid: dataKey.kid, iv: toB64u(sealed.iv), ct: toB64u(sealed.ct), tag: toB64u(sealed.tag) };
}

/** The plaintext, or CryptoError AUTH_FAILED: never a partial or unauthenticated result. */
export function decryptContent(envelope: Envelope, dataKey: SecretKey, aad: ContentAad): string {
  const parsed = Envelope.parse(envelope);
  if (parsed.kid !== dataKey.kid) {
    throw new CryptoError('AUTH_FAILED', `envelope needs data key ${parsed.kid}, was given ${dataKey.kid}`);
  }
  const plain = openGcm(
    { iv: fromB64u(parsed.iv), ct: fromB64u(parsed.ct), tag: fromB64u(parsed.tag) },
    dataKey.key,
    contentAad(parsed.v, parsed.kid, aad),
    `content of ${aad.recordId} v${aad.version}`,
  );
  return plain.toString('utf8');
}
