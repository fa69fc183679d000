import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import { DeletionTask, TOPICS, type Clock, type ServiceHandle } from '@gm/contracts';
import { deletionAck } from '@gm/service-kit';
import type { SearchIndex } from '@gm/search-index';

export const INDEX_TARGETS_GROUP = 'index-builder.deletion';

/**
 * Executes deletion tasks for the `keyword` target (the search index). The ack's evidence is
 * what is still there after removal, read back by id — not what we hoped to remove.
 */
export function indexTargetHandler(index: SearchIndex, clock: Clock) {
  return async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const task = DeletionTask.parse(message.value);
    if (task.target !== 'keyword') return;
    const removed = await index.remove(task.tenantId, task.recordIds);
    let remaining = 0;
    for (const id of task.recordIds) if (await index.get(task.tenantId, id)) remaining += 1;
    ctx.send([deletionAck(task, 'index-builder', clock, { ok: remaining === 0, ref: `removed=${removed};remaining=${remaining}` })]);
  };
}

export async function startIndexTargets(deps: { bus: Bus; index: SearchIndex; clock: Clock }): Promise<ServiceHandle> {
  const sub = await deps.bus.subscribe({
    groupId: INDEX_TARGETS_GROUP, topics: [TOPICS.deletionTasks], handler: indexTargetHandler(deps.index, deps.clock),
  });
  return { close: () => sub.close() };
}
