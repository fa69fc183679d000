import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { commitToContent, commitToHash, newOpening, opensTo } from './receipt-commitments.ts';

const content = 'Customer 77 has HIV';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('receipt content commitments', () => {
  it('the requester\'s opening shows that exactly this content was covered; another content does not open it', () => {
    const opening = newOpening();
    const commitment = commitToHash(opening, sha256(content));
    expect(commitment).toMatch(/^[0-9a-f]{64}$/);
    expect(commitToContent(opening, content)).toBe(commitment);
    expect(opensTo(commitment, opening, content)).toBe(true);
    expect(opensTo(commitment, opening, Buffer.from(content, 'utf8'))).toBe(true);
    for (const guess of ['Customer 77 has HIV.', 'customer 77 has HIV', 'Customer 78 has HIV', `${content}\n`, '']) {
      expect(opensTo(commitment, opening, guess)).toBe(false);
    }
    expect(opensTo(commitment, newOpening(), content)).toBe(false);
    expect(opensTo('not hex', opening, content)).toBe(false);
  });

  it('without the opening a guess cannot be checked: the commitment is not the content\'s hash and differs per opening', () => {
    const a = commitToHash(newOpening(), sha256(content));
    const b = commitToHash(newOpening(), sha256(content));
    expect(a).not.toBe(b);
    // None of the unkeyed digests a guesser would try.
    for (const plain of [sha256(content), createHash('sha256').update(sha256(content), 'utf8').digest('hex'), createHash('sha256').update(Buffer.from(sha256(content), 'hex')).digest('hex')]) {
      expect([a, b]).not.toContain(plain);
    }
    expect(newOpening()).toMatch(/^[0-9a-f]{64}$/);
    expect(newOpening()).not.toBe(newOpening());
  });

  it('is the documented formula: openssl checks it by hand (HMAC-SHA256 keyed with the opening over the binary SHA-256)', () => {
    const opening = newOpening();
    const digest = createHash('sha256').update(content, 'utf8').digest();
    const byHand = execFileSync('openssl', ['dgst', '-sha256', '-mac', 'HMAC', '-macopt', `hexkey:${opening}`], { input: digest }).toString('utf8');
    expect(byHand.trim().split(/\s+/).at(-1)).toBe(commitToContent(opening, content));
  });
});
