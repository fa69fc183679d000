import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Content commitments of deletion receipts (design §8.4, docs/deletion.md "Content
 * commitments"). A receipt must let the requester, who holds the content, show that exactly
 * this content was covered, and let nobody else confirm a guess: a plain sha256 lets anyone
 * who reads the receipt hash a guessed sentence and compare.
 *
 *   commitment = HMAC-SHA256(key = opening, message = SHA-256(UTF-8 content))
 *
 * with a random 32-byte opening per record per job. HMAC is a PRF under a secret key, so without
 * the opening the commitment says nothing about the content (hiding); with it, another content
 * would need a SHA-256 or HMAC collision (binding). Over the digest rather than the content so
 * the verifier, which knows the records' hashes and not always their content, can commit.
 * By hand: `printf %s "$CONTENT" | openssl dgst -sha256 -binary | openssl dgst -sha256 -mac HMAC -macopt hexkey:$OPENING`.
 */

export const newOpening = (): string => randomBytes(32).toString('hex');

/** The commitment to the content whose sha256 (hex) is `contentSha256`, under `opening` (hex). */
export function commitToHash(opening: string, contentSha256: string): string {
  return createHmac('sha256', Buffer.from(opening, 'hex')).update(Buffer.from(contentSha256, 'hex')).digest('hex');
}

/** The commitment to `content` (as the API received it: its UTF-8 bytes) under `opening`. */
export const commitToContent = (opening: string, content: string | Uint8Array): string =>
  commitToHash(opening, createHash('sha256').update(content).digest('hex'));

/** Whether `commitment` is the commitment to `content` under `opening` (constant time). */
export function opensTo(commitment: string, opening: string, content: string | Uint8Array): boolean {
  const expected = Buffer.from(commitToContent(opening, content), 'hex');
  const given = Buffer.from(commitment, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
