import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, deletionAck, type Clock, type ServiceHandle } from '@gm/contracts';
import type { StateStore } from '@gm/state-store';

export const BROKER_TARGETS_GROUP = CONSUMER_GROUPS.brokerTargets;

/**
 * Executes deletion tasks for the copies the read path makes: cached results and evidence
 * packets. Evidence counts what is left afterwards, read back from the store.
 */
export function brokerTargetHandler(state: StateStore, clock: Clock) {
  return async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const task = DeletionTask.parse(message.value);
    if (task.target !== 'retrieval_cache' && task.target !== 'evidence_packet') return;
    const store = task.target === 'retrieval_cache' ? state.cache : state.packets;
    const changed = await store.invalidate(task.tenantId, task.recordIds);
    const remaining = (await store.holding(task.tenantId, task.recordIds)).length;
    ctx.send([deletionAck(task, 'retrieval-broker', clock, { ok: remaining === 0, ref: `invalidated=${changed};remaining=${remaining}` })]);
  };
}

export async function startBrokerTargets(deps: { bus: Bus; state: StateStore; clock: Clock }): Promise<ServiceHandle> {
  const sub = await deps.bus.subscribe({
    groupId: BROKER_TARGETS_GROUP, topics: [TOPICS.deletionTasks], handler: brokerTargetHandler(deps.state, deps.clock),
  });
  return { close: () => sub.close() };
}
