import type { Action, CapabilityClaims, Clock } from '@gm/contracts';
import { requireAction, type CapabilityVerifier } from '@gm/policy';

/** A presented capability's claims, if it is genuine, current, unrevoked and allows `action`; otherwise its CAP_* error. */
export async function verifyCapability(verifier: CapabilityVerifier, clock: Clock, token: string, action: Action): Promise<CapabilityClaims> {
  const claims = await verifier.verify(token, clock.now());
  requireAction(claims, action);
  return claims;
}
