import type { Clock } from '@gm/contracts';
import {
  CapabilityVerifier, CedarPolicyDecisionPoint, RevisionCachedPolicySource, type CompiledPolicySet, type PolicyDecisionPoint, type SigningKeyPair,
} from '@gm/policy';
import type { StateStore } from '@gm/state-store';

export interface AuthorityOptions {
  state: Pick<StateStore, 'policies' | 'policyDecisions'>;
  clock: Clock;
  /** The validated Cedar policy set (loadPolicySet). */
  policySet: CompiledPolicySet;
  /** The capability signing key's public half: an edge verifies capabilities, it never issues them. */
  publicJwk: SigningKeyPair['publicJwk'];
  issuerName: string;
}

/**
 * What decides at every edge: the capability verifier (signature, lifetime, and revocation
 * read from the state store on each verification, so a revocation holds on the next request)
 * and the Cedar policy decision point over the tenant's grants at their current revision.
 */
export async function edgeAuthority(o: AuthorityOptions): Promise<{ pdp: PolicyDecisionPoint; verifier: CapabilityVerifier }> {
  const revocations = {
    isRevoked: (c: { tenant: string; sub: string; jti: string; act: { sub: string } }) => o.state.policyDecisions.isRevoked(c.tenant, c.sub, c.jti, c.act.sub),
  };
  return {
    pdp: new CedarPolicyDecisionPoint({ source: new RevisionCachedPolicySource(o.state.policies, o.state.policyDecisions), clock: o.clock, policySet: o.policySet }),
    verifier: await CapabilityVerifier.create(o.publicJwk, o.issuerName, revocations),
  };
}
