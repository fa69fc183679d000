import { createHash } from 'node:crypto';

/**
 * A deterministic id for a command a service derives from other ids (a job's tombstone of one
 * record, the expiry of a record at its due time): the same parts always give the same id, so
 * a resent command lands in the same idempotency slot, and different parts never collide. The
 * parts are hashed, not joined and cut to length: two long ids cut to 128 characters could be
 * one id, and the idempotency short-circuit would then skip a tombstone, a purge or an expiry.
 */
export function derivedId(prefix: string, ...parts: ReadonlyArray<string | number>): string {
  // Length-prefixed, so ('a.b', 'c') and ('a', 'b.c') are different inputs.
  const input = parts.map((p) => `${String(p).length}:${String(p)}`).join('');
  return `${prefix}.${createHash('sha256').update(input, 'utf8').digest('hex')}`;
}
