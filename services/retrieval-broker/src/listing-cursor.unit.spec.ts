import { describe, expect, it } from 'vitest';
import { ListingCursors, type ListingOwner } from './listing-cursor.ts';

const SECRET = 'gmi_this-deployments-issuer-credential-for-the-spec';
const owner: ListingOwner = { tenant: 'acme', principal: 'alice', order: 'newest' };
const at = { ms: 1_796_516_376_417, jobId: '01M94BZ4XEPMCN1NAHAWMADZH2' };

describe("the deletion-jobs listing's cursor", () => {
  const cursors = new ListingCursors(SECRET);

  it('continues the listing it came from, and shows nothing of the position it names', () => {
    const cursor = cursors.seal(at, owner);
    expect(new ListingCursors(SECRET).open(cursor, owner)).toEqual(at);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const bytes = Buffer.from(cursor.slice(3), 'base64url').toString('latin1');
    for (const part of [at.jobId, String(at.ms), 'acme', 'alice', 'newest']) expect(bytes).not.toContain(part);
    // Two cursors of the same position differ, so equal positions cannot be told apart either.
    expect(cursors.seal(at, owner)).not.toBe(cursor);
  });

  it("refuses another principal's or tenant's cursor, one of the other order, an edited one and another deployment's", () => {
    const cursor = cursors.seal(at, owner);
    const refusals: Array<[string, () => unknown, string]> = [
      ['another principal', () => cursors.open(cursor, { ...owner, principal: 'mallory' }), 'cursor: not a cursor of this listing'],
      ['another tenant', () => cursors.open(cursor, { ...owner, tenant: 'globex' }), 'cursor: not a cursor of this listing'],
      ['the other order', () => cursors.open(cursor, { ...owner, order: 'oldest' }), 'cursor: a cursor of the newest-first listing, not of order=oldest'],
      ['edited', () => cursors.open(`${cursor.slice(0, -2)}${cursor.endsWith('AA') ? 'AB' : 'AA'}`, owner), 'cursor: not a cursor of this listing'],
      ['another deployment', () => new ListingCursors('gmi_someone-elses-credential-entirely').open(cursor, owner), 'cursor: not a cursor of this listing'],
      ['the old clear form', () => cursors.open(Buffer.from(JSON.stringify([at.ms, at.jobId])).toString('base64url'), owner), 'cursor: not a cursor of this listing'],
      ['too short', () => cursors.open('lc1AAAA', owner), 'cursor: not a cursor of this listing'],
    ];
    for (const [what, open, detail] of refusals) expect(open, what).toThrow(expect.objectContaining({ code: 'MEM_VALIDATION', message: detail }));
  });
});
