import { hkdfSync } from 'node:crypto';
import { KEY_BYTES, type SecretKey } from '../envelope.ts';
import { CryptoError } from '../errors.ts';
import type { MasterKeys } from '../master-keys.ts';

/*
 * Commands carry content from the API to write-admission before any subject key may exist:
 * only write-admission creates subject keys (it alone owns a subject's partition, and the key
 * store has no compare-and-set). So WriteMemory content is sealed with a transit key instead,
 * derived from a master key (HKDF-SHA256): every service holding the master keys derives the
 * same one, with nothing to store or race for. A forget cannot destroy it — memory.commands is
 * an inbox that is never replayed, and its retention bounds how long the sealed copy lives.
 */
const TRANSIT_PREFIX = 'tk:';

export const transitKeyId = (masterKeyId: string): string => `${TRANSIT_PREFIX}${masterKeyId}`;
export const isTransitKeyId = (kid: string): boolean => kid.startsWith(TRANSIT_PREFIX);

export class TransitKeys {
  private readonly derived = new Map<string, SecretKey>();

  constructor(private readonly masters: MasterKeys) {}

  /** The key new commands are sealed with: derived from the active master key. */
  active(): SecretKey {
    return this.byId(transitKeyId(this.masters.active));
  }

  /** The transit key an envelope names; MASTER_KEY_MISMATCH when its master key is not configured here. */
  byId(kid: string): SecretKey {
    const cached = this.derived.get(kid);
    if (cached !== undefined) return cached;
    if (!isTransitKeyId(kid)) throw new CryptoError('AUTH_FAILED', `${kid} is not a transit key id`);
    const masterId = kid.slice(TRANSIT_PREFIX.length);
    const master = this.masters.keys.get(masterId);
    if (master === undefined) {
      throw new CryptoError('MASTER_KEY_MISMATCH', `a command is sealed with the transit key of master key "${masterId}", which is not configured`);
    }
    const key: SecretKey = { kid, key: Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'gm.transit.v1', KEY_BYTES)) };
    this.derived.set(kid, key);
    return key;
  }
}
