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
  // The orchestrator sends a job's `keyword` and `summary` tasks together: the two targets run
  // side by side, each lane in task order. A summary rebuild leaves the job's records out
  // whether or not the index dropped them yet, so neither waits for the other (on Elasticsearch
  // each is a few round trips and a refresh, and the second used to wait for the first).
  const sub = await deps.bus.subscribe({
    groupId: INDEX_TARGETS_GROUP, topics: [TOPICS.deletionTasks],
    batchHandler: async (messages, ctx) => {
      const lane = async (handle: typeof keyword) => {
        for (const message of messages) await handle(message, ctx);
      };
      // Both lanes end before the batch does, even when one fails: nothing sends after it.
      const outcomes = await Promise.allSettled([lane(keyword), ...(summary === undefined ? [] : [lane(summary)])]);
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    },
  });
  return { close: () => sub.close() };
}
