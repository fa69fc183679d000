import { CapabilityClaims } from '@gm/contracts';

/**
 * What a capability says about itself, read from its payload without verifying the signature:
 * for choosing defaults (its tenant, scopes and purpose) and knowing when it expires. The
 * server verifies every capability it is sent; nothing here is a security decision.
 */
export function readCapability(token: string): CapabilityClaims {
  const payload = token.split('.')[1];
  if (payload === undefined) throw new TypeError('a capability is a compact JWS: header.payload.signature');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new TypeError('the capability\'s payload is not base64url JSON');
  }
  const parsed = CapabilityClaims.safeParse(claims);
  if (!parsed.success) throw new TypeError(`the token is not a capability: ${parsed.error.issues[0]?.message ?? 'invalid claims'}`);
  return parsed.data;
}
