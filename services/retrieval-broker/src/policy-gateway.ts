import type { Bus, LogPosition } from '@gm/bus';
import { newUlid } from '@gm/ids';
import {
  CONSUMER_GROUPS, GovernedMemoryError, PolicyChange, TOPICS,
  type CapabilityClaims, type Clock, type PolicyChangeType,
} from '@gm/contracts';
import type { Logger, Metrics } from '@gm/observability';
import type { PolicyRefusal, StateStore } from '@gm/state-store';
import { within } from './within.ts';

/** What a refusal of the fold answers: the same as the broker's own check would have. */
const REFUSALS: Record<PolicyRefusal, () => GovernedMemoryError> = {
  'grant-id-taken': () => new GovernedMemoryError('MEM_ID_TAKEN', 'this grant id names another grant'),
  // The route answers the identical grant's id instead (routes/policy.ts).
  'grant-duplicate': () => new GovernedMemoryError('MEM_CONFLICT', 'an identical grant was added meanwhile'),
  'last-admin': () => new GovernedMemoryError('MEM_LAST_ADMIN', 'another change left this the last administrator\'s grant: it was not removed'),
};

type ChangeData<T extends PolicyChangeType> = Extract<PolicyChange, { type: T }>['data'];

/**
 * Produces policy changes (keyed by tenant) and waits until the policy projector has
 * committed past them, so the caller's very next request is decided under the new policy
 * (§7: a revocation takes effect on the next read). Answers the revision the change produced.
 */
export class PolicyGateway {
  constructor(
    private readonly deps: { bus: Bus; state: StateStore; clock: Clock; log: Logger; metrics: Pick<Metrics, 'policyChangeSeconds'> },
    private readonly options: { timeoutMs: number },
  ) {
    // Both outcomes start at 0: the alert on timeouts then sees the first (docs/deploy.md#alerts).
    for (const outcome of ['applied', 'timeout']) deps.metrics.policyChangeSeconds.zero({ outcome });
  }

  async submit<T extends PolicyChangeType>(claims: CapabilityClaims, type: T, data: ChangeData<T>): Promise<number> {
    const tenant = claims.tenant;
    // Revocation convergence as operators see it (§7): the request to the projector's apply.
    const observe = this.deps.metrics.policyChangeSeconds.startTimer();
    const produced = await within(this.produce(tenant, { agentId: claims.sub, principalId: claims.act.sub }, type, data), this.options.timeoutMs);
    if (produced === undefined) {
      observe({ outcome: 'timeout' });
      throw new GovernedMemoryError('MEM_TIMEOUT', 'the policy change was not durably in the log in time; it may still land, and repeating it is safe', { retriable: true });
    }
    const { changeId, position } = produced;
    const applied = await this.deps.bus.waitForCommitted(CONSUMER_GROUPS.policyProjector, position, this.options.timeoutMs);
    if (!applied) {
      observe({ outcome: 'timeout' });
      throw new GovernedMemoryError('MEM_TIMEOUT', 'the policy change is recorded and takes effect once applied; repeating it is safe', { retriable: true });
    }
    observe({ outcome: 'applied' });
    const outcome = await this.deps.state.policies.outcomeOf(tenant, changeId);
    if (outcome === null) throw new GovernedMemoryError('MEM_INTERNAL', 'the policy change was not applied');
    // The fold holds the administration plane's invariants against races (state-store policies.ts).
    if (outcome.refused !== undefined) {
      this.deps.log.info({ tenant, changeId, type, refused: outcome.refused, agentId: claims.sub }, 'policy change refused by the fold');
      throw REFUSALS[outcome.refused]();
    }
    const revision = outcome.revision;
    this.deps.log.info({ tenant, changeId, type, policyRevision: revision, agentId: claims.sub }, 'policy change applied');
    return revision;
  }

  /** Records a change without waiting for the projector (a start-up bootstrap: the projector may not run yet). */
  async produce<T extends PolicyChangeType>(
    tenant: string, requestedBy: { agentId: string; principalId: string }, type: T, data: ChangeData<T>,
  ): Promise<{ changeId: string; position: LogPosition }> {
    const changeId = newUlid();
    const change = PolicyChange.parse({ type, data, metadata: { changeId, tenant, requestedBy, occurredAt: this.deps.clock.now().toISOString() } });
    const [position] = await this.deps.bus.produce([{ topic: TOPICS.policyChanges, key: tenant, value: change }]);
    if (!position) throw new GovernedMemoryError('MEM_INTERNAL', 'the bus returned no position for a policy change');
    return { changeId, position };
  }
}
