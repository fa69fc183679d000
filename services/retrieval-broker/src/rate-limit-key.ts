import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { BrokerDeps } from './deps.ts';

const isIssuerCredential = (presented: string, expected: string): boolean =>
  timingSafeEqual(createHash('sha256').update(presented).digest(), createHash('sha256').update(expected).digest());

/**
 * The bucket a request counts against (design §9): a capability's principal once its signature
 * verifies — forged claims cannot push someone else's bucket, and a fresh `sub` does not escape
 * one —, the issuer for the issuer credential, and the client's address otherwise (no
 * capability, or one that does not verify). The
 * key is JSON of its parts, so no tenant or principal id can collide with another's.
 */
export function rateLimitKey(deps: Pick<BrokerDeps, 'verifier' | 'clock' | 'issuerCredential'>): (request: FastifyRequest) => Promise<string> {
  return async (request) => {
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    if (match?.[1] !== undefined) {
      // The issuer (capability issue) is one party with a bucket of its own, wherever it calls from.
      if (isIssuerCredential(match[1], deps.issuerCredential)) return JSON.stringify(['issuer']);
      try {
        const claims = await deps.verifier.verify(match[1], deps.clock.now());
        // The authorization hook takes these claims instead of verifying the same token again.
        request.verifiedCapability = { token: match[1], claims };
        return JSON.stringify(['principal', claims.tenant, claims.act.sub]);
      } catch {
        // Answered by the authorization hook; it counts against the address meanwhile.
      }
    }
    return JSON.stringify(['address', request.ip]);
  };
}
