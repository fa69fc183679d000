import type { Bus } from '@gm/bus';
import { DeletionTask, TOPICS, type Clock, type ServiceHandle } from '@gm/contracts';
import type { VectorIndex } from '@gm/search-index';
import { deletionAck } from '@gm/service-kit';

export const VECTOR_TARGETS_GROUP = 'vector-indexer.deletion';

/**
 * Executes deletion tasks for the `vector` target (design §8): removes the records' vectors,
 * and acknowledges with what is still there afterwards, read back by id — not what it hoped
 * to remove. Its own group, so a forget does not wait behind the embedding backlog.
 */
export async function startVectorTargets(deps: { bus: Bus; vectors: VectorIndex; clock: Clock }): Promise<ServiceHandle> {
  const { vectors, clock } = deps;
  const sub = await deps.bus.subscribe({
    groupId: VECTOR_TARGETS_GROUP, topics: [TOPICS.deletionTasks],
    handler: async (message, ctx) => {
      const task = DeletionTask.parse(message.value);
      if (task.target !== 'vector') return;
      const removed = await vectors.remove(task.tenantId, task.recordIds);
      let remaining = 0;
      for (const id of task.recordIds) if (await vectors.has(task.tenantId, id)) remaining += 1;
      ctx.send([deletionAck(task, 'vector-indexer', clock, { ok: remaining === 0, ref: `removed=${removed};remaining=${remaining}` })]);
    },
  });
  return { close: () => sub.close() };
}
