import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { GovernedMemoryError, type Action, type CapabilityClaims, type Clock } from '@gm/contracts';
import type { CapabilityVerifier } from '@gm/policy';
import { verifyCapability } from '@gm/write-edge';
import { auditCapability } from './query-audit.ts';

export function bearer(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!match?.[1]) throw new GovernedMemoryError('CAP_MISSING', 'a Bearer capability is required');
  return match[1];
}

export async function authenticate(request: FastifyRequest, verifier: CapabilityVerifier, clock: Clock, action: Action): Promise<CapabilityClaims> {
  const claims = await verifyCapability(verifier, clock, bearer(request), action);
  auditCapability(claims.act.sub, claims.purpose);
  return claims;
}

/** Constant-time comparison of the issuer credential (hash first so lengths match). */
export function checkIssuerCredential(request: FastifyRequest, expected: string): void {
  let presented = '';
  try {
    presented = bearer(request);
  } catch {
    throw new GovernedMemoryError('ISSUER_UNAUTHORIZED', 'the issuer credential is missing');
  }
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  if (!timingSafeEqual(a, b)) throw new GovernedMemoryError('ISSUER_UNAUTHORIZED', 'the issuer credential is not valid');
}
