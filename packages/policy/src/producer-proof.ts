/**
 * Producer proofs on memory.ingest (design §6.1, docs/ingest.md#producer-proofs): a message of a
 * key-bound capability carries a compact JWS, signed by the bound key, over the message's topic,
 * key, body digest, the capability's digest and a time. The gateway verifies it here; whether
 * the proof was seen before is its own concern (a store shared by its replicas).
 */
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, CompactSign, compactVerify, EmbeddedJWK, importJWK, type JWK } from 'jose';
import {
  GovernedMemoryError, INGEST_PROOF_TYP, IngestProofClaims, ProducerPublicKey, canonicalJson,
} from '@gm/contracts';

const ALG = 'EdDSA';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('base64url');

/** The digest a proof's `bd` must hold for a message's value. */
export const bodyDigest = (value: unknown): string => sha256(canonicalJson(value));

/** The digest a proof's `ath` must hold for a capability. */
export const capabilityDigest = (capability: string): string => sha256(capability);

/** The thumbprint (RFC 7638, SHA-256) a capability bound to this key carries as `cnf.jkt`. */
export const producerKeyThumbprint = (jwk: ProducerPublicKey): Promise<string> => calculateJwkThumbprint(jwk, 'sha256');

/** What the message is: where it was produced and what it holds. */
export interface ProducedMessage {
  /** The Kafka topic, namespace included. */
  topic: string;
  key: string;
  value: unknown;
}

/**
 * Signs a message for a capability bound to `publicJwk` (the SDK's and the specs' producer; the
 * example producer does the same with node:crypto alone).
 */
export async function signIngestProof(
  keys: { privateJwk: JWK; publicJwk: ProducerPublicKey },
  capability: string,
  message: ProducedMessage,
  iat: number,
  jti: string = randomUUID(),
): Promise<string> {
  const claims: IngestProofClaims = { jti, iat, topic: message.topic, key: message.key, bd: bodyDigest(message.value), ath: capabilityDigest(capability) };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg: ALG, typ: INGEST_PROOF_TYP, jwk: keys.publicJwk })
    .sign(await importJWK(keys.privateJwk, ALG));
}

const invalid = (why: string, cause?: unknown) => new GovernedMemoryError('CAP_PROOF_INVALID', `the producer proof ${why}`, cause === undefined ? {} : { cause });

/**
 * The proof's claims if it is a proof of the key `jkt` names, for exactly this capability and
 * message, signed within `windowMs` of `now`; otherwise CAP_PROOF_INVALID or CAP_PROOF_STALE.
 */
export async function verifyIngestProof(
  proof: string,
  expected: { capability: string; jkt: string; message: ProducedMessage },
  now: Date,
  windowMs: number,
): Promise<IngestProofClaims> {
  if (proof === '') throw invalid('is missing: a capability bound to a key needs the "capability-proof" header');
  let verified: Awaited<ReturnType<typeof compactVerify>>;
  try {
    // The key travels in the proof's own header; it counts only if its thumbprint is the one the capability was issued for.
    verified = await compactVerify(proof, EmbeddedJWK, { algorithms: [ALG] });
  } catch (err) {
    throw invalid('is not a JWS signed by the key in its header', err);
  }
  const { protectedHeader, payload } = verified;
  if (protectedHeader.typ !== INGEST_PROOF_TYP) throw invalid(`is not of type ${INGEST_PROOF_TYP}`);
  const key = ProducerPublicKey.safeParse(protectedHeader.jwk);
  if (!key.success || (await producerKeyThumbprint(key.data)) !== expected.jkt) throw invalid('is not signed by the key the capability is bound to');
  let claims: IngestProofClaims;
  try {
    claims = IngestProofClaims.parse(JSON.parse(new TextDecoder().decode(payload)));
  } catch (err) {
    throw invalid('claims are malformed', err);
  }
  if (claims.ath !== capabilityDigest(expected.capability)) throw invalid('was made for another capability');
  if (claims.topic !== expected.message.topic) throw invalid('was made for another topic');
  if (claims.key !== expected.message.key) throw invalid('was made for another message key');
  if (claims.bd !== bodyDigest(expected.message.value)) throw invalid('does not sign this body');
  if (Math.abs(now.getTime() - claims.iat * 1000) > windowMs) {
    throw new GovernedMemoryError('CAP_PROOF_STALE', `the producer proof was signed more than ${Math.round(windowMs / 1000)} s from the gateway's time`);
  }
  return claims;
}
