import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, errors as joseErrors, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import {
  CapabilityClaims, GovernedMemoryError, LIMITS,
  type Action, type IssueCapabilityRequest,
} from '@gm/contracts';

export const CAPABILITY_AUDIENCE = 'governed-memory';
const ALG = 'EdDSA';
type ImportedKey = Awaited<ReturnType<typeof importJWK>>;

export interface SigningKeyPair {
  privateJwk: JWK;
  publicJwk: JWK;
}

export async function generateSigningKeyPair(): Promise<SigningKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true });
  return { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) };
}

/** Signs capabilities (design §6.1). The issuer vouches for every claim it signs. */
export class CapabilityIssuer {
  private constructor(
    private readonly key: ImportedKey,
    private readonly issuer: string,
  ) {}

  static async create(privateJwk: JWK, issuer: string): Promise<CapabilityIssuer> {
    return new CapabilityIssuer(await importJWK(privateJwk, ALG), issuer);
  }

  async issue(request: IssueCapabilityRequest, now: Date, policyRevision: number): Promise<{ token: string; expiresAt: string; jti: string }> {
    const iat = Math.floor(now.getTime() / 1000);
    const ttl = Math.min(request.ttlSeconds ?? LIMITS.maxCapabilityTtlSeconds, LIMITS.maxCapabilityTtlSeconds);
    const exp = iat + ttl;
    const jti = randomUUID();
    const claims = {
      act: request.principal ? { sub: request.principal.id, kind: request.principal.kind } : { sub: request.agentId, kind: 'agent' },
      tenant: request.tenant,
      run: request.run ?? jti,
      scopes: request.scopes,
      purpose: request.purpose,
      actions: [...new Set(request.actions)],
      rev: policyRevision,
      // Bound to the producer's key (RFC 7800 `cnf`, RFC 9449's `jkt`): usable only with a proof of it (§6.1).
      ...(request.producerKey === undefined ? {} : { cnf: { jkt: await calculateJwkThumbprint(request.producerKey, 'sha256') } }),
    };
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: ALG, typ: 'cap+jwt' })
      .setIssuer(this.issuer)
      .setAudience(CAPABILITY_AUDIENCE)
      .setSubject(request.agentId)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(exp)
      .setJti(jti)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000).toISOString(), jti };
  }
}

/** Revocation lookups (a capability id or a whole agent); backed by the state store. */
export interface RevocationList {
  isRevoked(claims: CapabilityClaims): Promise<boolean>;
}

export const noRevocations: RevocationList = { isRevoked: async () => false };

/**
 * Verifies capabilities. A verified token is cached by its hash until it expires (jose
 * Ed25519 verify costs ≈0.25–0.5 ms here); revocation is checked on every call so that it
 * takes effect on the very next request (§7).
 */
export class CapabilityVerifier {
  private readonly cache = new Map<string, CapabilityClaims>();

  private constructor(
    private readonly key: ImportedKey,
    private readonly issuer: string,
    private readonly revocations: RevocationList,
    private readonly maxCached = 10_000,
  ) {}

  static async create(publicJwk: JWK, issuer: string, revocations: RevocationList = noRevocations): Promise<CapabilityVerifier> {
    return new CapabilityVerifier(await importJWK(publicJwk, ALG), issuer, revocations);
  }

  /**
   * `holderProof`: the caller checks, itself, a proof of the key a bound capability names (the
   * ingest-gateway's producer proofs). Without it a bound capability is refused (CAP_KEY_BOUND):
   * presented as a bearer token, it may be a copy read off memory.ingest (§6.1).
   */
  async verify(token: string, now: Date, options: { holderProof?: boolean } = {}): Promise<CapabilityClaims> {
    const nowSec = Math.floor(now.getTime() / 1000);
    const hash = createHash('sha256').update(token).digest('hex');
    let claims = this.cache.get(hash);
    if (claims && claims.exp <= nowSec) {
      this.cache.delete(hash);
      throw new GovernedMemoryError('CAP_EXPIRED', 'the capability has expired');
    }
    if (!claims) {
      claims = await this.verifySignature(token, now);
      if (this.cache.size >= this.maxCached) this.cache.clear();
      this.cache.set(hash, claims);
    }
    if (claims.nbf !== undefined && claims.nbf > nowSec) {
      throw new GovernedMemoryError('CAP_NOT_YET_VALID', 'the capability is not valid yet');
    }
    if (await this.revocations.isRevoked(claims)) throw new GovernedMemoryError('CAP_REVOKED', 'the capability was revoked');
    if (claims.cnf !== undefined && options.holderProof !== true) {
      throw new GovernedMemoryError('CAP_KEY_BOUND', 'the capability is bound to a producer key: it is taken on memory.ingest only, with a proof of that key');
    }
    return claims;
  }

  private async verifySignature(token: string, now: Date): Promise<CapabilityClaims> {
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: [ALG],
        issuer: this.issuer,
        audience: CAPABILITY_AUDIENCE,
        currentDate: now,
        typ: 'cap+jwt',
        // Bounds the usable window to [iat, iat + 15 min] even if a token carries an early nbf
        // or a future iat. No clock tolerance: issuer and verifier share one clock here (the
        // distributed runtime will need a few seconds of it).
        maxTokenAge: LIMITS.maxCapabilityTtlSeconds,
        requiredClaims: ['exp', 'iat', 'jti', 'sub'],
      }));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw new GovernedMemoryError('CAP_EXPIRED', 'the capability has expired');
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'nbf') {
        throw new GovernedMemoryError('CAP_NOT_YET_VALID', 'the capability is not valid yet');
      }
      throw new GovernedMemoryError('CAP_INVALID', 'the capability is not valid', { cause: err });
    }
    const parsed = CapabilityClaims.safeParse(payload);
    if (!parsed.success) throw new GovernedMemoryError('CAP_INVALID', 'the capability claims are malformed');
    const p = parsed.data;
    if (p.exp - p.iat > LIMITS.maxCapabilityTtlSeconds) {
      throw new GovernedMemoryError('CAP_INVALID', 'the capability lives longer than 15 minutes');
    }
    // Frozen: the cached claims are shared by every request that presents this token.
    return Object.freeze(structuredClone(p));
  }
}

export function requireAction(claims: CapabilityClaims, action: Action): void {
  if (!claims.actions.includes(action)) {
    throw new GovernedMemoryError('CAP_ACTION_DENIED', `the capability does not grant "${action}"`);
  }
}
