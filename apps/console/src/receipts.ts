import { decodeBase64Url, decodeJsonSegment, isObject } from './base64url.ts';

/**
 * Verifies a deletion receipt in the browser, the way `verifyReceipt` (packages/policy
 * receipts.ts) does on the server: a compact JWS with the header `{alg: EdDSA, typ:
 * receipt+jws, kid}`, an Ed25519 signature over the ASCII of `<header>.<payload>`, by the
 * published key named by `kid`, over a JSON deletion receipt. Nothing here trusts the server's
 * word that a receipt is valid: only the signature and a published key.
 */

const ALG = 'EdDSA';
const RECEIPT_TYPE = 'receipt+jws';
const ED25519_SIGNATURE_BYTES = 64;

/** A published receipt key (GET /v1/receipt-keys), as far as verification reads it. */
export interface PublicJwk {
  kty?: string;
  crv?: string;
  x?: string;
  kid?: string;
}

export type Verdict =
  | { valid: true; kid: string | undefined; payload: Record<string, unknown> }
  | { valid: false; reason: string; payload?: unknown };

const invalid = (reason: string, payload?: unknown): Verdict => ({ valid: false, reason, ...(payload === undefined ? {} : { payload }) });

export async function verifyReceiptJws(jws: string, keys: readonly PublicJwk[]): Promise<Verdict> {
  const parts = jws.trim().split('.');
  if (parts.length !== 3) return invalid('not a compact JWS (three base64url parts joined by dots)');
  const [headerPart = '', payloadPart = '', signaturePart = ''] = parts;
  const header = decodeJsonSegment(headerPart);
  if (!isObject(header)) return invalid('the protected header is not base64url JSON');
  const payload = decodeJsonSegment(payloadPart);
  if (header.alg !== ALG || header.typ !== RECEIPT_TYPE) {
    return invalid(`unexpected header (alg ${String(header.alg)}, typ ${String(header.typ)}): a receipt is ${ALG}, ${RECEIPT_TYPE}`, payload ?? undefined);
  }
  // RFC 7515 section 4.1.11: extensions the verifier does not understand make the JWS invalid.
  if (header.crit !== undefined) return invalid('the header names critical extensions this verifier does not know', payload ?? undefined);
  const signature = decodeBase64Url(signaturePart);
  if (signature === null || signature.length !== ED25519_SIGNATURE_BYTES) return invalid('the signature is not a base64url Ed25519 signature', payload ?? undefined);

  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  const candidates = kid === undefined ? keys : keys.filter((k) => k.kid === kid);
  if (candidates.length === 0) {
    return invalid(kid === undefined ? 'no receipt key is published' : `no published receipt key has kid ${kid}`, payload ?? undefined);
  }
  const signingInput = new TextEncoder().encode(`${headerPart}.${payloadPart}`);
  let signedBy: PublicJwk | undefined;
  for (const jwk of candidates) {
    const outcome = await verifyWith(jwk, signature, signingInput);
    if (typeof outcome === 'string') return invalid(outcome, payload ?? undefined);
    if (outcome) {
      signedBy = jwk;
      break;
    }
  }
  if (signedBy === undefined) {
    return invalid('the signature does not verify: the receipt was altered or signed with another key', payload ?? undefined);
  }
  if (!isReceipt(payload)) return invalid('the signature verifies, but the signed payload is not a deletion receipt', payload ?? undefined);
  return { valid: true, kid: signedBy.kid ?? kid, payload };
}

/** true/false: the signature's verdict with this key; a string: why no verdict was possible. */
async function verifyWith(jwk: PublicJwk, signature: Uint8Array<ArrayBuffer>, signingInput: Uint8Array<ArrayBuffer>): Promise<boolean | string> {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return false;
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) return 'cannot verify: WebCrypto is unavailable (the console needs a secure context, https or localhost)';
  // Only the key material: `alg`, `use` and `kid` of the JWKS are not WebCrypto's to check.
  const key = await subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, { name: 'Ed25519' }, false, ['verify'])
    .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  if (key instanceof Error) return key.name === 'NotSupportedError' ? 'cannot verify: this browser has no Ed25519 in WebCrypto' : false;
  return subtle.verify({ name: 'Ed25519' }, key, signature, signingInput);
}

/** The receipt's shape as far as the console shows it (the server parses the full DeletionReceipt). */
function isReceipt(payload: unknown): payload is Record<string, unknown> {
  return (
    isObject(payload) &&
    typeof payload.receiptId === 'string' &&
    typeof payload.jobId === 'string' &&
    typeof payload.tenant === 'string' &&
    (payload.status === 'verified' || payload.status === 'failed') &&
    typeof payload.retention === 'string' &&
    Array.isArray(payload.targets)
  );
}

/** The verdict as one line: it begins with exactly "valid" or "invalid", then says why. */
export const verdictText = (verdict: Verdict): string =>
  verdict.valid ? `valid: Ed25519 signature verified with receipt key ${verdict.kid ?? '(no kid)'}` : `invalid: ${verdict.reason}`;
