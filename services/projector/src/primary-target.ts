import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, deletionAck, type Clock, type ServiceHandle } from '@gm/contracts';
import type { StateStore } from '@gm/state-store';

export const PRIMARY_TARGET_GROUP = CONSUMER_GROUPS.primaryTarget;

/** Executes deletion tasks for the `primary` target: the content copy next to the record hash. */
export function primaryTargetHandler(state: StateStore, clock: Clock) {
  return async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const task = DeletionTask.parse(message.value);
    if (task.target !== 'primary') return;
    const removed = task.retainPrimary ? 0 : await state.contents.remove(task.tenantId, task.recordIds);
    const left = await state.contents.count(task.tenantId, task.recordIds);
    const ok = task.retainPrimary || left === 0;
    const ref = task.retainPrimary ? `retained=${left}` : `removed=${removed};remaining=${left}`;
    ctx.send([deletionAck(task, 'projector', clock, { ok, ref })]);
  };
}

export async function startPrimaryTarget(deps: { bus: Bus; state: StateStore; clock: Clock }): Promise<ServiceHandle> {
  const sub = await deps.bus.subscribe({
    groupId: PRIMARY_TARGET_GROUP, topics: [TOPICS.deletionTasks], handler: primaryTargetHandler(deps.state, deps.clock),
  });
  return { close: () => sub.close() };
}
