import { GovernedMemoryError } from '@gm/contracts';
import type { KeyValueStore } from '../port.ts';
import type { KeySpace } from './keys.ts';
import type { Revocations } from './jobs.ts';

const notLoaded = () => new GovernedMemoryError(
  'MEM_UNAVAILABLE',
  // What the caller may know: decisions are paused. The operator's alert names the cause and the remedy (the policy projector's log).
  'policy decisions are paused while the policy projection is loaded; retry later',
  { retriable: true },
);

/**
 * Whether this store's policy projection is the fold of policy.changes from its start (design
 * §4, §6.2). A store that lost its data (Redis emptied, a new Redis beside an existing log)
 * holds no grant and no revocation: deciding on it would deny every holder of a grant and let
 * every revoked capability through. The marker is set where a fold from the log's start is
 * known to run: by the policy projector whose group has never committed (a new deployment),
 * and by the rebuild from the log once it has folded policy.changes. It is never set by a
 * projector that merely carries on, so a store emptied under a running projector stays closed
 * until it is rebuilt.
 */
export class PolicyProjection {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  mark = async (): Promise<void> => {
    await this.kv.set(this.keys.policyLoaded(), '1');
  };
  unmark = async (): Promise<void> => {
    await this.kv.del([this.keys.policyLoaded()]);
  };
  isMarked = async (): Promise<boolean> => (await this.kv.get(this.keys.policyLoaded())) !== null;
}

/**
 * The policy reads a decision rests on (the PDP's revision, the revocation check), each in the
 * same round trip as the marker's: MEM_UNAVAILABLE (a 503, or a retried ingest batch) while the
 * projection is not loaded, never an answer from an empty store.
 */
export class PolicyDecisionReads {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace, private readonly revocations: Revocations) {}

  /** The tenant's policy revision (RevisionCachedPolicySource's `revisions`). */
  async current(tenantId: string): Promise<number> {
    const [loaded, revision] = await this.kv.mget([this.keys.policyLoaded(), this.keys.policyRevision(tenantId)]);
    if (loaded === null) throw notLoaded();
    return revision === null || revision === undefined ? 0 : Number(revision);
  }

  async isRevoked(tenant: string, agentId: string, jti: string, principalId?: string): Promise<boolean> {
    const [loaded, ...revoked] = await this.kv.mget([this.keys.policyLoaded(), ...this.revocations.keysOf(tenant, agentId, jti, principalId)]);
    if (loaded === null) throw notLoaded();
    return revoked.some((v) => v !== null);
  }
}
