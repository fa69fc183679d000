import type { Bus } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, removalAck, type Clock, type ServiceHandle } from '@gm/contracts';
import type { VectorIndex } from '@gm/search-index';

export const VECTOR_TARGETS_GROUP = CONSUMER_GROUPS.vectorTargets;

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
      ctx.send([await removalAck(task, 'vector-indexer', clock, { remove: (t, ids) => vectors.remove(t, ids), holds: (t, id) => vectors.has(t, id) })]);
    },
  });
  return { close: () => sub.close() };
}
