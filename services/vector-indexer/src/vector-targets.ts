import { awaitGroupCaughtUp, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, removalAck, type Clock, type ServiceHandle } from '@gm/contracts';
import type { VectorIndex } from '@gm/search-index';
import { VECTOR_INDEXER_GROUP } from './vector-indexer.ts';

export const VECTOR_TARGETS_GROUP = CONSUMER_GROUPS.vectorTargets;

/** How long one attempt waits for the vector-indexer before the bus retries the task. */
const INDEXER_WAIT_MS = 5_000;

/**
 * Executes deletion tasks for the `vector` target (design §8): removes the records' vectors,
 * and acknowledges with what is still there afterwards, read back by id — not what it hoped
 * to remove. Its own group, so a forget's task is not queued behind the embedding backlog; but
 * it waits until the vector-indexer has passed the job's tombstones (§8.2), since a vector still
 * being embedded from an earlier event would land after the removal.
 */
export async function startVectorTargets(deps: { bus: Bus; vectors: VectorIndex; clock: Clock }): Promise<ServiceHandle> {
  const { bus, vectors, clock } = deps;
  const sub = await bus.subscribe({
    groupId: VECTOR_TARGETS_GROUP, topics: [TOPICS.deletionTasks],
    handler: async (message, ctx) => {
      const task = DeletionTask.parse(message.value);
      if (task.target !== 'vector') return;
      await awaitGroupCaughtUp(bus, VECTOR_INDEXER_GROUP, TOPICS.events, INDEXER_WAIT_MS);
      ctx.send([await removalAck(task, 'vector-indexer', clock, { remove: (t, ids) => vectors.remove(t, ids), holds: (t, id) => vectors.has(t, id) })]);
    },
  });
  return { close: () => sub.close() };
}
