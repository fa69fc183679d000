import { awaitGroupCaughtUp, type Bus, type ConsumedMessage, type ProcessContext } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, removalAck, type Clock, type ServiceHandle } from '@gm/contracts';
import type { SearchIndex, SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { INDEX_BUILDER_GROUP } from './index-builder.ts';
import { summaryTargetHandler } from './summaries.ts';

export const INDEX_TARGETS_GROUP = CONSUMER_GROUPS.indexTargets;

/** How long one attempt waits for the index-builder before the bus retries the tasks. */
const INDEX_BUILDER_WAIT_MS = 5_000;

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
      // A document the index-builder is still writing from an event before the job's tombstones
      // would land after the removal (§8.2): the keyword lane waits until it passed them.
      const keywordLane = async () => {
        if (messages.some((m) => DeletionTask.parse(m.value).target === 'keyword')) {
          await awaitGroupCaughtUp(deps.bus, INDEX_BUILDER_GROUP, TOPICS.events, INDEX_BUILDER_WAIT_MS);
        }
        await lane(keyword);
      };
      // Both lanes end before the batch does, even when one fails: nothing sends after it.
      const outcomes = await Promise.allSettled([keywordLane(), ...(summary === undefined ? [] : [lane(summary)])]);
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    },
  });
  return { close: () => sub.close() };
}
