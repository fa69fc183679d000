import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { GovernedMemoryError } from '@gm/contracts';

export function bearer(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!match?.[1]) throw new GovernedMemoryError('CAP_MISSING', 'a Bearer capability is required');
  return match[1];
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
