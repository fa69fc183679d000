import { SENDS_NOTHING, subscribeToMemoryEventBatches, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, GovernedMemoryError, isUnreadableContent, type MemoryEvent, type ServiceHandle } from '@gm/contracts';
import { indexChanges } from '@gm/domain';
import type { IndexDocument, SearchIndex, SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { toIndexDocument } from './index-document.ts';
import { summarizeEvents } from './summaries.ts';

export const INDEX_BUILDER_GROUP = CONSUMER_GROUPS.indexBuilder;

/**
 * Keeps the index equal to the set of active records — active ⇒ indexed, anything else ⇒
 * removed — for a batch of events in log order: each record's last state in the batch decides,
 * so the batch costs one upsert and one remove per tenant (one `_bulk` each on Elasticsearch, one
 * transaction each on SQLite) instead of a write per event.
 */
export async function indexEvents(index: SearchIndex, events: readonly MemoryEvent[]): Promise<void> {
  const { present, removals } = indexChanges(events);
  const upserts: IndexDocument[] = [];
  for (const state of present) {
    // A promotion that carried no content: the indexed copy has it (none means it was removed meanwhile).
    const content = state.content ?? (await index.get(state.tenantId, state.recordId))?.content;
    if (content !== undefined && !isUnreadableContent(content)) upserts.push(toIndexDocument(state.meta, content));
  }
  if (upserts.length > 0) await index.upsert(upserts);
  for (const [tenantId, ids] of removals) await index.remove(tenantId, ids);
}

/** `indexEvents` of one event (the summaries spec applies events one at a time). */
export function indexEvent(index: SearchIndex, event: MemoryEvent): Promise<void> {
  return indexEvents(index, [event]);
}

/**
 * After each batch's index changes the data generation of every tenant it touched is bumped
 * again: the projector bumps it first, and a search between the two would otherwise cache a
 * result that misses the change under the newer generation.
 */
export async function startIndexBuilder(deps: { bus: Bus; index: SearchIndex; state: StateStore }): Promise<ServiceHandle> {
  return subscribeToMemoryEventBatches(deps.bus, INDEX_BUILDER_GROUP, async (batch) => {
    const events = batch.map((b) => b.event);
    await indexEvents(deps.index, events);
    for (const tenant of new Set(events.map((e) => e.metadata.tenantId))) await deps.state.generations.bump(tenant);
    // Nothing is sent: its commits are plain group commits, not transactions (SENDS_NOTHING).
  }, SENDS_NOTHING);
}

export const SUMMARY_BUILDER_GROUP = CONSUMER_GROUPS.summaryBuilder;
/** How long one attempt waits for the index-builder before the bus retries the event. */
const INDEX_WAIT_MS = 5_000;
/**
 * Summaries lag writes by up to this much more, so that under load a batch holds many events
 * and each scope is rebuilt once for all of them (a rebuild reads its subject's record hash and
 * the top of each purpose's ranking). 100 ms
 * left rebuilds at a quarter of the embedded runtime's CPU under 8 writers; under batch ingest
 * 500 ms still left them at 31 % of the pipeline thread (docs/pipeline.md, "Lingering").
 */
const SUMMARY_LINGER_MS = 1000;
/**
 * A rebuild costs per scope, not per event: with the bus's 256 per batch, a partition of 50
 * busy subjects rebuilt a scope for every five events, and the group could fold at most
 * 256 × partitions events per linger. 4,096 lets one batch take a second of heavy ingest.
 */
const SUMMARY_BATCH_MESSAGES = 4096;
/**
 * And at most this share of its thread (embedded: the pipeline thread, beside the projections
 * that read-your-writes waits for): under sustained ingest the lag grows instead.
 */
const SUMMARY_LINGER_SHARE = 0.25;

/**
 * Summaries (§6.8) in a consumer group of their own, one step behind the index-builder:
 * they are folded from the search index, so each batch of events waits until the index-builder
 * has committed past it, then the summaries of every scope it touched are rebuilt, once each. Kept out of the
 * index-builder's handler because read-your-writes waits for that group, and a rebuild (searches,
 * a bulk write, a refresh) doubled the write latency on Elasticsearch. Summaries therefore
 * follow writes eventually; the read path still re-checks every source of a summary before
 * returning it, so a summary that lags a deletion is dropped, never shown.
 */
export async function startSummaryBuilder(deps: { bus: Bus; index: SearchIndex; state: StateStore; summaries: SummaryStore }): Promise<ServiceHandle> {
  return subscribeToMemoryEventBatches(deps.bus, SUMMARY_BUILDER_GROUP, async (batch) => {
    const last = batch.at(-1);
    if (last === undefined) return;
    if (!(await deps.bus.waitForCommitted(INDEX_BUILDER_GROUP, last.message, INDEX_WAIT_MS))) {
      // Retriable: the bus retries it for as long as the index-builder lags, never dead-letters it.
      throw new GovernedMemoryError('MEM_UNAVAILABLE', 'the index-builder has not indexed these events yet', { retriable: true });
    }
    await summarizeEvents({ index: deps.index, summaries: deps.summaries, state: deps.state }, batch.map((b) => b.event));
  }, { ...SENDS_NOTHING, lingerMs: SUMMARY_LINGER_MS, lingerShare: SUMMARY_LINGER_SHARE, maxBatchMessages: SUMMARY_BATCH_MESSAGES });
}
