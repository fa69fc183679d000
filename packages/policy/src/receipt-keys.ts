/**
 * Rotating the receipt signing key (design §8.4): a new Ed25519 pair replaces the one in the key
 * file, and the old public half moves to the file's `retired` list. The signer publishes its
 * current public key and every retired one at start (`GET /v1/receipt-keys`), so receipts signed
 * before a rotation keep verifying, there and offline.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { ReceiptPublicKey } from '@gm/contracts';
import { generateSigningKeyPair } from './capabilities.ts';
import { receiptPublicKey, type ReceiptKeyPair } from './receipts.ts';

/** The key file: the pair that signs, and the public halves of the pairs that signed before. */
export type ReceiptKeyFile = ReceiptKeyPair;

export interface RotationOutcome {
  previousKid: string;
  kid: string;
  /** Public keys that stay published for old receipts (every earlier one). */
  retiredKids: string[];
}

export function readReceiptKeyFile(file: string): ReceiptKeyFile {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<ReceiptKeyFile>;
  if (typeof parsed.privateJwk !== 'object' || typeof parsed.publicJwk !== 'object') {
    throw new Error(`${file} is not a receipt key file ({privateJwk, publicJwk, retired?})`);
  }
  if (parsed.retired !== undefined && !Array.isArray(parsed.retired)) throw new Error(`${file}: retired must be a list of public JWKs`);
  return parsed as ReceiptKeyFile;
}

/**
 * Replaces the pair in `file` with a new one, keeping every earlier public half under `retired`.
 * Written to a temporary file (0600) and renamed over the old one, so a crash leaves either the
 * old file or the new one, never half of each. `publicFile`, when given, gets every public key
 * as a JWKS, the current one first (what `memctl receipt verify` reads by default).
 */
export async function rotateReceiptKeyFile(file: string, publicFile?: string): Promise<RotationOutcome> {
  const current = readReceiptKeyFile(file);
  const next = await generateSigningKeyPair();
  const retired = [current.publicJwk, ...(current.retired ?? [])];
  const rotated: ReceiptKeyFile = { ...next, retired };
  const tmp = `${file}.rotating`;
  writeFileSync(tmp, JSON.stringify(rotated), { mode: 0o600 });
  renameSync(tmp, file);
  const published = await publishedReceiptKeys(rotated);
  if (publicFile !== undefined) writeFileSync(publicFile, `${JSON.stringify({ keys: published })}\n`);
  const [now, ...earlier] = published;
  return { previousKid: earlier[0]?.kid ?? '', kid: now?.kid ?? '', retiredKids: earlier.map((k) => k.kid) };
}

/** The public keys a signer with this key file publishes: its own, then the retired ones. */
export async function publishedReceiptKeys(keys: ReceiptKeyFile): Promise<ReceiptPublicKey[]> {
  return Promise.all([keys.publicJwk, ...(keys.retired ?? [])].map((jwk) => receiptPublicKey(jwk)));
}
