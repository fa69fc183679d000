/**
 * Who produced a memory.ingest message (design §6.1, docs/ingest.md#producer-proofs). A capability
 * bound to a producer key is taken only with a proof, per message, signed by that key over the
 * message and a time within the window, and never seen on another message before: a reader of
 * the topic, who sees capability and proof, can neither change a body under them nor have a copy
 * admitted. An unbound (bearer) capability is taken only where the deployment still accepts the
 * old form (MEMORY_INGEST_UNBOUND_CAPABILITIES).
 */
import type { ConsumedMessage } from '@gm/bus';
import {
  GovernedMemoryError, INGEST_CAPABILITY_HEADER, INGEST_PROOF_HEADER, isDependencyOutage, isGovernedMemoryError,
  type Action, type CapabilityClaims, type Clock,
} from '@gm/contracts';
import { requireAction, verifyIngestProof, type CapabilityVerifier } from '@gm/policy';
import type { SeenProofs } from './seen-proofs.ts';

export interface ProducerAuthConfig {
  /** The Kafka name of memory.ingest, namespace included: the topic a proof must name. */
  topic: string;
  /** How far a proof's time may be from the gateway's (MEMORY_INGEST_PROOF_WINDOW_SECONDS). */
  windowMs: number;
  /** `refuse`: key-bound capabilities only; `accept`: bearer ones too, the old form, while producers migrate. */
  unbound: 'accept' | 'refuse';
  seen: SeenProofs;
}

export interface ProducerAuthDeps {
  verifier: CapabilityVerifier;
  clock: Clock;
  producers: ProducerAuthConfig;
}

/** The capability's claims, and for each message of it the error that refuses it, if any. */
export interface Authenticated {
  claims: CapabilityClaims;
  refused: Array<GovernedMemoryError | undefined>;
}

/**
 * Authenticates the messages that carry one capability: its CAP_* error refuses them all; a
 * message's own proof refuses it alone. An outage is thrown (the batch is retried).
 */
export async function authenticateProducer(
  deps: ProducerAuthDeps, token: string, messages: readonly ConsumedMessage[], action: Action,
): Promise<Authenticated | GovernedMemoryError> {
  const now = deps.clock.now();
  const claims = await refusal(async () => {
    if (token === '') throw new GovernedMemoryError('CAP_MISSING', `a capability is required in the "${INGEST_CAPABILITY_HEADER}" header`);
    const verified = await deps.verifier.verify(token, now, { holderProof: true });
    requireAction(verified, action);
    return verified;
  });
  if (claims instanceof GovernedMemoryError) return claims;
  const { cnf } = claims;
  if (cnf === undefined) {
    if (deps.producers.unbound === 'accept') return { claims, refused: messages.map(() => undefined) };
    return new GovernedMemoryError('CAP_KEY_REQUIRED', 'memory.ingest takes only capabilities bound to a producer key, with each message signed by it (docs/ingest.md#producer-proofs)');
  }
  const { topic, windowMs, seen } = deps.producers;
  const proofs = await Promise.all(messages.map((m) => refusal(() => verifyIngestProof(
    m.headers[INGEST_PROOF_HEADER] ?? '', { capability: token, jkt: cnf.jkt, message: { topic, key: m.key, value: m.value } }, now, windowMs,
  ))));
  const claimable = messages.flatMap((m, i) => {
    const proof = proofs[i];
    return proof === undefined || proof instanceof GovernedMemoryError ? [] : [{ i, claim: { jkt: cnf.jkt, jti: proof.jti, at: m } }];
  });
  const own = await seen.claim(claimable.map((c) => c.claim));
  const refused = proofs.map((p) => (p instanceof GovernedMemoryError ? p : undefined));
  claimable.forEach((c, n) => {
    if (own[n] !== true) refused[c.i] = new GovernedMemoryError('CAP_PROOF_REPLAYED', 'the producer proof was presented by another message: this one is a copy');
  });
  return { claims, refused };
}

/** The value, or the non-outage GovernedMemoryError that refuses it. */
async function refusal<T>(fn: () => Promise<T>): Promise<T | GovernedMemoryError> {
  try {
    return await fn();
  } catch (err) {
    if (!isGovernedMemoryError(err) || isDependencyOutage(err)) throw err;
    return err;
  }
}
