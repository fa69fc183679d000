import { Envelope } from '../envelope.ts';
import { CryptoError, isCryptoError } from '../errors.ts';
import type { Keyring } from '../keyring.ts';

/** A subject's key generation: what a snapshot's sealed part is bound to. */
export interface SubjectKeyRef {
  tenantId: string;
  subjectId: string;
  /** The subject's key-encryption-key generation (SubjectState.keyGeneration; 1 when absent). */
  kekGeneration: number;
}

/**
 * Seals what a stored snapshot must not hold in clear — the plain hashes of content and the
 * request fingerprints of a subject's records — under a key of the subject's own (design §8.5).
 * Not under a deployment-wide key: anyone holding that could still confirm a guess against an
 * old copy of a snapshot (a Redis AOF, a backup) after the subject was forgotten. Under the
 * subject's key-encryption key, a forget destroys it, and every copy of the sealed part, old or
 * not, opens no more.
 */
export interface SnapshotSealer {
  /**
   * The key the state store keeps the subject's snapshot under: `tenant/~` and a keyed digest of
   * the subject (no subject id holds `~`), so the store's keys do not name the subject.
   */
  storageKey(subject: { tenantId: string; subjectId: string }): string;
  seal(ref: SubjectKeyRef, plaintext: string): Promise<Envelope>;
  /** The plaintext, or undefined once the subject's key of that generation is destroyed. */
  open(ref: SubjectKeyRef, sealed: unknown): Promise<string | undefined>;
}

/**
 * A data key per subject and generation, wrapped by the subject's KEK of that generation, so it
 * goes with it (a forget's shred never counts it as a record that keeps the KEK). Its "record id"
 * names no subject (Keyring.snapshotKeyRecordId).
 */
export function keyringSnapshotSealer(keyring: Keyring): SnapshotSealer {
  const aad = (ref: SubjectKeyRef, recordId: string) => ({
    tenantId: ref.tenantId, subjectId: ref.subjectId, recordId, version: 0, kekGeneration: ref.kekGeneration,
  });
  return {
    storageKey: ({ tenantId, subjectId }) => `${tenantId}/~${keyring.subjectPseudonym(tenantId, subjectId, 'gm.adm.v1')}`,
    seal: (ref, plaintext) => keyring.encrypt(plaintext, aad(ref, keyring.snapshotKeyRecordId(ref.tenantId, ref.subjectId, ref.kekGeneration)), 2),
    async open(ref, sealed) {
      const envelope = Envelope.parse(sealed);
      try {
        return await keyring.decrypt(envelope, aad(ref, snapshotRecordIdOf(envelope.kid, ref)));
      } catch (err) {
        if (isCryptoError(err, 'KEY_DESTROYED')) return undefined;
        throw err;
      }
    },
  };
}

/**
 * The snapshot key's "record id" as the envelope's data key id names it: a snapshot sealed
 * before keyed ids names its key by the plain-hash form, and still opens. The AAD binds the
 * subject either way; a kid of another shape opens nothing.
 */
function snapshotRecordIdOf(kid: string, ref: SubjectKeyRef): string {
  const prefix = `dk:${ref.tenantId}/`;
  const generation = /\/\d+$/.exec(kid);
  const recordId = kid.startsWith(prefix) && generation !== null ? kid.slice(prefix.length, generation.index) : '';
  if (!recordId.startsWith('~adm~')) throw new CryptoError('AUTH_FAILED', `${kid} is not a snapshot key of ${ref.tenantId}`);
  return recordId;
}
