import { z } from 'zod';
import { Id, PrincipalKind, Purpose, ScopeRef, TenantId } from './primitives.ts';

export const Action = z.enum(['search', 'read', 'cite', 'write', 'promote', 'review', 'request_delete', 'revoke', 'admin']);
export type Action = z.infer<typeof Action>;

/** Claims of a capability (design §6.1), after signature verification. */
export const CapabilityClaims = z.object({
  iss: z.string().min(1),
  aud: z.string().min(1),
  sub: Id,
  act: z.object({ sub: Id, kind: PrincipalKind }).strict(),
  tenant: TenantId,
  run: Id,
  /** Resources, and at most the capability's own tenant (tenant-wide actions, §6.2). */
  scopes: z.array(ScopeRef).min(1).max(64),
  purpose: Purpose,
  actions: z.array(Action).min(1),
  exp: z.number().int(),
  iat: z.number().int(),
  nbf: z.number().int().optional(),
  rev: z.number().int().min(0),
  jti: Id,
  /**
   * Confirmation (RFC 7800, as RFC 9449 uses it): the SHA-256 JWK thumbprint (RFC 7638) of the
   * producer key the capability is bound to. A bound capability is no bearer token: it is taken
   * only on memory.ingest, with each message signed by that key (design §6.1, docs/ingest.md).
   */
  cnf: z.object({ jkt: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a base64url SHA-256 thumbprint') }).strict().optional(),
});
export type CapabilityClaims = z.infer<typeof CapabilityClaims>;

/** Who performs a command, always taken from a verified capability, never from a body. */
export const Actor = z
  .object({
    agentId: Id,
    principalId: Id,
    principalKind: PrincipalKind,
    runId: Id,
    purpose: Purpose,
  })
  .strict();
export type Actor = z.infer<typeof Actor>;

export function actorFromClaims(claims: CapabilityClaims): Actor {
  return {
    agentId: claims.sub,
    principalId: claims.act.sub,
    principalKind: claims.act.kind,
    runId: claims.run,
    purpose: claims.purpose,
  };
}
