import type { Bus, MessageHandler } from '@gm/bus';
import { CONSUMER_GROUPS, PolicyChange, TOPICS, type ServiceHandle } from '@gm/contracts';
import type { Logger } from '@gm/observability';
import type { StateStore } from '@gm/state-store';

export const POLICY_PROJECTOR_GROUP = CONSUMER_GROUPS.policyProjector;

/**
 * Applies policy.changes to the state store (grants, delegations, revocations, legal holds)
 * and bumps the tenant's policy revision once per change, so retrieval caches and evidence
 * packets keyed by the old revision are unreachable from then on (§6.6). The API answers a
 * policy change only after this group committed past it: that is what makes a revocation
 * effective on the very next request (§7).
 *
 * A message that is not a policy change, or whose key is not its tenant, throws: the bus
 * retries it and dead-letters it with its provenance. A state-store outage (MEM_UNAVAILABLE)
 * is retried without limit, never dead-lettered.
 */
export function policyChangeHandler(state: StateStore, log: Logger): MessageHandler {
  return async (message) => {
    const parsed = PolicyChange.safeParse(message.value);
    if (!parsed.success) throw new Error('policy.changes carries a message that is not a policy change');
    const change = parsed.data;
    if (message.key !== change.metadata.tenant) throw new Error('a policy change must be keyed by its tenant');
    const { applied, revision } = await state.policies.apply(change);
    // Also after a redelivery: the first handling may have died between apply and this.
    const cacheEntriesDropped = await state.cache.invalidateTenant(change.metadata.tenant);
    log.info({ tenant: change.metadata.tenant, changeId: change.metadata.changeId, type: change.type, revision, applied, cacheEntriesDropped }, 'policy change applied');
  };
}

export async function startPolicyProjector(deps: { bus: Bus; state: StateStore; log: Logger }): Promise<ServiceHandle> {
  const sub = await deps.bus.subscribe({
    groupId: POLICY_PROJECTOR_GROUP, topics: [TOPICS.policyChanges], handler: policyChangeHandler(deps.state, deps.log),
  });
  return { close: () => sub.close() };
}
