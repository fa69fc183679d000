import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, removalAck, type Clock, type ServiceHandle } from '@gm/contracts';
import type { SearchIndex, SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { summaryTargetHandler } from './summaries.ts';

export const INDEX_TARGETS_GROUP = CONSUMER_GROUPS.indexTargets;

/**
 * Executes deletion tasks for the `keyword` target (the search index). The ack's evidence is
 * what is still there after removal, read back by id — not what we hoped to remove.
 */
export function indexTargetHandler(index: SearchIndex, clock: Clock) {
  return async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const task = DeletionTask.parse(message.value);
    if (task.target !== 'keyword') return;
    ctx.send([await removalAck(task, 'index-builder', clock, { remove: (t, ids) => index.remove(t, ids), holds: async (t, id) => (await index.get(t, id)) !== null })]);
  };
}

/** `keyword` tasks always; `summary` tasks when the summary store (and the state, for tombstones) is given. */
export async function startIndexTargets(
  deps: { bus: Bus; index: SearchIndex; clock: Clock; summaries?: { store: SummaryStore; state: StateStore } },
): Promise<ServiceHandle> {
  const keyword = indexTargetHandler(deps.index, deps.clock);
  const summary = deps.summaries === undefined
    ? undefined
    : summaryTargetHandler({ index: deps.index, summaries: deps.summaries.store, state: deps.summaries.state }, deps.clock);
  const sub = await deps.bus.subscribe({
    groupId: INDEX_TARGETS_GROUP, topics: [TOPICS.deletionTasks],
    handler: async (message, ctx) => {
      await keyword(message, ctx);
      if (summary !== undefined) await summary(message, ctx);
    },
  });
  return { close: () => sub.close() };
}
