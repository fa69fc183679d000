/**
 * How a producer on memory.ingest proves who it is without handing over a bearer token (design
 * §6.1, docs/ingest.md#producer-proofs): its capability is bound to its key (claim `cnf.jkt`), and
 * each message carries, beside the capability, a proof — a compact JWS signed by that key over
 * the message (its topic, key and body) and a time. A reader of the topic holds no key: it can
 * neither present the capability elsewhere nor put its own body under it.
 */
import { z } from 'zod';
import { Id } from './primitives.ts';

/** The header of a memory.ingest message that carries the producer's proof (a compact JWS). */
export const INGEST_PROOF_HEADER = 'capability-proof';

/** The `typ` of a proof's protected header: no capability (`cap+jwt`) passes for a proof, nor one for the other. */
export const INGEST_PROOF_TYP = 'gm-ingest-pop+jwt';

const SHA256_B64URL = /^[A-Za-z0-9_-]{43}$/;

/** An Ed25519 public key as a JWK (RFC 8037): the only key a capability is bound to. */
export const ProducerPublicKey = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().regex(SHA256_B64URL, 'the 32-byte public key, base64url'),
}).strict();
export type ProducerPublicKey = z.infer<typeof ProducerPublicKey>;

/**
 * What a proof signs. The body is signed as its digest over the canonical JSON (RFC 8785) of the
 * message's value, so the gateway checks what it admits, however the producer spaced its bytes.
 */
export const IngestProofClaims = z.object({
  /** Unique per message, chosen by the producer: a second message with it within the window is a copy. */
  jti: Id,
  /** When the producer signed, in seconds since the epoch (JWT NumericDate). */
  iat: z.number().int().min(0),
  /** The Kafka topic the message was produced to, namespace included (`<MEMORY_NAMESPACE>.memory.ingest`). */
  topic: z.string().min(1).max(249),
  /** The message's key ('' for none). */
  key: z.string().max(1024),
  /** base64url SHA-256 of the canonical JSON of the message's value. */
  bd: z.string().regex(SHA256_B64URL),
  /** base64url SHA-256 of the capability (the compact JWS in the `capability` header), as RFC 9449's `ath`. */
  ath: z.string().regex(SHA256_B64URL),
}).strict();
export type IngestProofClaims = z.infer<typeof IngestProofClaims>;

/**
 * The canonical JSON of a value (RFC 8785): object members sorted by UTF-16 code units, no
 * whitespace, strings and numbers as ECMAScript serialises them. A producer in another language
 * uses its JCS library.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
