import { calculateJwkThumbprint, CompactSign, compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import {
  DeletionReceipt, GovernedMemoryError, RECEIPT_TYPE, ReceiptPublicKey, type SignedReceipt,
} from '@gm/contracts';
import type { SigningKeyPair } from './capabilities.ts';

const ALG = 'EdDSA';

/**
 * The receipt signing key pair: Ed25519 JWKs, the same shape as the capability key, and the
 * public halves of the pairs it was rotated from (receipt-keys.ts), still published.
 */
export type ReceiptKeyPair = SigningKeyPair & { retired?: JWK[] };

/** The public JWK of a receipt key, with its kid (RFC 7638 thumbprint), alg and use. */
export async function receiptPublicKey(publicJwk: JWK): Promise<ReceiptPublicKey> {
  const kid = await calculateJwkThumbprint({ kty: publicJwk.kty, crv: publicJwk.crv, x: publicJwk.x } as JWK);
  return ReceiptPublicKey.parse({ kty: publicJwk.kty, crv: publicJwk.crv, x: publicJwk.x, kid, alg: ALG, use: 'sig' });
}

/**
 * Signs deletion receipts (design §8.4) as a compact JWS over the receipt's JSON, with the
 * header `{alg: EdDSA, typ: receipt+jws, kid}`.
 */
export class ReceiptSigner {
  private constructor(
    private readonly key: Awaited<ReturnType<typeof importJWK>>,
    readonly publicKey: ReceiptPublicKey,
  ) {}

  static async create(keys: SigningKeyPair): Promise<ReceiptSigner> {
    return new ReceiptSigner(await importJWK(keys.privateJwk, ALG), await receiptPublicKey(keys.publicJwk));
  }

  get kid(): string {
    return this.publicKey.kid;
  }

  async sign(receipt: DeletionReceipt): Promise<SignedReceipt> {
    const payload = new TextEncoder().encode(JSON.stringify(DeletionReceipt.parse(receipt)));
    const jws = await new CompactSign(payload).setProtectedHeader({ alg: ALG, typ: RECEIPT_TYPE, kid: this.kid }).sign(this.key);
    return { receiptId: receipt.receiptId, jobId: receipt.jobId, tenant: receipt.tenant, kid: this.kid, jws };
  }
}

const invalid = (message: string, cause?: unknown) =>
  new GovernedMemoryError('RECEIPT_INVALID', message, cause === undefined ? {} : { cause });

/**
 * Verifies a receipt offline against public keys (a JWK, or the keys of a JWKS): the signature,
 * the header (`alg EdDSA`, `typ receipt+jws`) and the payload's shape. Throws `RECEIPT_INVALID`.
 * A key is chosen by the header's kid; a single key without a kid is tried as is.
 */
export async function verifyReceipt(jws: string, keys: ReadonlyArray<JWK>): Promise<{ payload: DeletionReceipt; kid: string | undefined }> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(jws.trim());
  } catch (err) {
    throw invalid('not a compact JWS', err);
  }
  if (header.alg !== ALG || header.typ !== RECEIPT_TYPE) throw invalid(`unexpected header (alg ${String(header.alg)}, typ ${String(header.typ)})`);
  const candidates = keys.filter((k) => header.kid !== undefined && k.kid === header.kid);
  if (candidates.length === 0 && keys.length === 1 && keys[0]?.kid === undefined) candidates.push(...keys);
  const key = candidates[0];
  if (!key) throw invalid(`no public key with kid ${String(header.kid)}`);
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(jws.trim(), await importJWK({ ...key, alg: ALG }, ALG), { algorithms: [ALG] }));
  } catch (err) {
    throw invalid('the signature does not verify: the receipt was altered or signed with another key', err);
  }
  const parsed = DeletionReceipt.safeParse(JSON.parse(new TextDecoder().decode(payload)));
  if (!parsed.success) throw invalid('the signed payload is not a deletion receipt');
  return { payload: parsed.data, kid: header.kid };
}

/** The payload of a receipt without verifying it (display only). */
export function decodeReceiptPayload(jws: string): unknown {
  const part = jws.trim().split('.')[1] ?? '';
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}
