import type { Bus, MessageHandler } from '@gm/bus';
import { CONSUMER_GROUPS, PolicyChange, TOPICS, isDependencyOutage, retryDelayMs, type ServiceHandle } from '@gm/contracts';
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
  await markIfFoldingFromStart(deps);
  const sub = await deps.bus.subscribe({
    groupId: POLICY_PROJECTOR_GROUP, topics: [TOPICS.policyChanges], handler: policyChangeHandler(deps.state, deps.log),
  });
  return { close: () => sub.close() };
}

/**
 * A group that has never committed folds policy.changes from its start: its store's projection
 * is loaded from here on (the changes not folded yet are the projector's ordinary lag). A group
 * that has committed, beside a store without the marker, means the store lost its data (Redis
 * emptied): decisions stay closed (MEM_UNAVAILABLE) until `pnpm rebuild:distributed` folds the
 * log again (state-store policy-projection.ts, docs/reliability.md).
 */
async function markIfFoldingFromStart(deps: { bus: Bus; state: StateStore; log: Logger }): Promise<void> {
  // Before the subscription: once the group commits, a new deployment looks like a lost store.
  // A store or broker outage at start is waited out, as the consumer would wait it out.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await checkMarker(deps);
    } catch (err) {
      if (!isDependencyOutage(err)) throw err;
      deps.log.warn({ attempt, err: err instanceof Error ? err.message : String(err) }, 'policy projection marker not readable yet; retrying');
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(100, attempt)));
    }
  }
}

async function checkMarker(deps: { bus: Bus; state: StateStore; log: Logger }): Promise<void> {
  if (await deps.state.policyProjection.isMarked()) return;
  const committed = await deps.bus.committedOffsets(POLICY_PROJECTOR_GROUP, TOPICS.policyChanges);
  if (committed.every((offset) => offset === 0)) {
    await deps.state.policyProjection.mark();
    return;
  }
  deps.log.error({ committed: committed.reduce((a, b) => a + b, 0) }, 'ALERT the state store holds no policy projection while policy.changes was folded before: it lost its data; every policy decision answers 503 until it is rebuilt from the log (pnpm rebuild:distributed)');
}
