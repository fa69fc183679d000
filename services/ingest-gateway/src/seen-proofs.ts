/**
 * The producer proofs the gateway has taken, shared by all its replicas through the state store
 * (Redis), so that a copy of a message is admitted by none of them (docs/ingest.md#producer-proofs).
 * A proof is claimed for the message that carried it — its partition and offset — so the same
 * message read again (a retried batch, a rebalance, a restart before the commit) is still itself,
 * and only another message with that proof is a copy.
 */
import type { LogPosition } from '@gm/bus';
import { keyOf } from '@gm/ids';
import type { KeyValueStore } from '@gm/state-store';

export interface ProofClaim {
  /** The thumbprint of the producer's key: proof ids are the producer's to choose, so they are scoped by its key. */
  jkt: string;
  jti: string;
  at: LogPosition;
}

export class SeenProofs {
  /**
   * `ttlMs`: how long a proof is remembered, at least as long as it can pass the window check
   * after it was first seen — twice the window, since a proof is taken from `iat − window` to `iat + window`.
   */
  constructor(
    private readonly kv: Pick<KeyValueStore, 'pipeline' | 'mget'>,
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  private key = (c: ProofClaim) => `${this.prefix}ingest-proof:${keyOf(c.jkt, c.jti)}`;

  /**
   * Claims each proof for its message in one round trip: true where the proof is this message's
   * (new, or claimed by this very message before), false where another message holds it.
   */
  async claim(claims: readonly ProofClaim[]): Promise<boolean[]> {
    if (claims.length === 0) return [];
    const entries = claims.map((c, i) => ({ i, key: this.key(c), place: JSON.stringify([c.at.topic, c.at.partition, c.at.offset]) }));
    const set = await this.kv.pipeline(entries.map((e) => ({ op: 'set' as const, key: e.key, value: e.place, ttlMs: this.ttlMs, nx: true })));
    const taken = entries.filter((e) => set[e.i] !== true);
    const result = claims.map(() => true);
    if (taken.length === 0) return result;
    const holders = await this.kv.mget(taken.map((e) => e.key));
    taken.forEach((e, n) => {
      // A holder gone between the two calls has outlived the window: the proof is stale, so refused too.
      result[e.i] = holders[n] === e.place;
    });
    return result;
  }
}
