/**
 * The deletion-jobs listing's cursor (docs/api.md "Deletion jobs"): where the next page starts,
 * sealed so that it tells its holder nothing.
 *
 * A listing reads the tenant's job index in slices and keeps what the caller may see. When a
 * slice ends before the page fills, the position it reached is the last job it *looked at*, which
 * may be another principal's: in the clear, its request time and id would say that someone
 * requested a deletion then, and under which id. Sealed with AES-256-GCM under a key derived from
 * the issuer credential, which every broker instance of a deployment shares (as for consistency
 * tokens), the cursor is opaque and cannot be edited. It is bound to the tenant, the principal and
 * the order of the listing it came from: anyone else's cursor, or one of the other order, is
 * refused rather than read.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { GovernedMemoryError, LIMITS } from '@gm/contracts';

export type ListingOrder = 'oldest' | 'newest';
export interface ListingPosition { ms: number; jobId: string }
/** Whose listing a cursor continues. */
export interface ListingOwner { tenant: string; principal: string; order: ListingOrder }

const PREFIX = 'lc1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const refused = (why: string) => new GovernedMemoryError('MEM_VALIDATION', `cursor: ${why}`);

export class ListingCursors {
  private readonly key: Buffer;

  /** `secret`: the issuer credential, the same on every broker instance of the deployment. */
  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'governed-memory', 'listing-cursor v1', 32));
  }

  seal(at: ListingPosition, owner: ListingOwner): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(PREFIX));
    const body = Buffer.from(JSON.stringify([owner.tenant, owner.principal, owner.order, at.ms, at.jobId]));
    const sealed = Buffer.concat([iv, cipher.update(body), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${sealed.toString('base64url')}`;
  }

  /** The position a cursor names, for this owner's listing; anything else is a 422. */
  open(cursor: string, owner: ListingOwner): ListingPosition {
    if (!cursor.startsWith(PREFIX)) throw refused('not a cursor of this listing');
    const bytes = Buffer.from(cursor.slice(PREFIX.length), 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) throw refused('not a cursor of this listing');
    let parts: unknown;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(PREFIX));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      parts = JSON.parse(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8'));
    } catch {
      // Edited, of another deployment, or not a cursor at all: one answer for all.
      throw refused('not a cursor of this listing');
    }
    const [tenant, principal, order, ms, jobId] = Array.isArray(parts) ? (parts as unknown[]) : [];
    const position = typeof ms === 'number' && Number.isSafeInteger(ms) && typeof jobId === 'string' && jobId.length <= LIMITS.maxIdLength;
    if (!position || tenant !== owner.tenant || principal !== owner.principal) throw refused('not a cursor of this listing');
    if (order !== owner.order) throw refused(`a cursor of the ${String(order)}-first listing, not of order=${owner.order}`);
    return { ms, jobId };
  }
}
