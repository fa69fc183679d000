import type { Bus } from '@gm/bus';
import { subscribeToMemoryEventBatches } from '@gm/service-kit';
import { GovernedMemoryError, isUnreadableContent, type MemoryEvent, type MemoryRecord, type RecordMeta, type ServiceHandle } from '@gm/contracts';
import { endedRecordIds, partitionKey } from '@gm/domain';
import type { IndexDocument, SearchIndex, SummaryStore } from '@gm/search-index';
import { recordRef, type StateStore } from '@gm/state-store';
import { summarizeEvents } from './summaries.ts';

export const INDEX_BUILDER_GROUP = 'index-builder';

export function toIndexDocument(meta: RecordMeta, content: string): IndexDocument {
  return {
    tenantId: meta.tenantId,
    recordId: meta.id,
    partition: partitionKey({
      tenantId: meta.tenantId, resource: meta.resource, visibility: meta.visibility,
      sensitivity: meta.sensitivity, ownerPrincipalId: meta.owner.principalId,
    }),
    subjectId: meta.subjectId,
    kind: meta.kind,
    purposes: meta.purposes,
    content,
    contentHash: meta.contentHash,
    confidence: meta.confidence,
    createdAt: meta.createdAt,
    expiresAt: meta.expiresAt,
    version: meta.version,
    provenance: meta.provenance,
  };
}

/**
 * Keeps the index equal to the set of active records — active ⇒ indexed, anything else ⇒
 * removed — for a batch of events in log order: each record's last state in the batch decides,
 * so the batch costs one upsert and one remove per tenant (one `_bulk` each on Elasticsearch, one
 * transaction each on SQLite) instead of a write per event.
 */
export async function indexEvents(index: SearchIndex, events: readonly MemoryEvent[]): Promise<void> {
  /** Per record (tenant and id): its document, or null once the batch removed it. */
  const last = new Map<string, { tenantId: string; recordId: string; doc: IndexDocument | null }>();
  const set = (tenantId: string, recordId: string, doc: IndexDocument | null) => {
    const key = recordRef(tenantId, recordId);
    // Re-inserted so that the map's order stays the order of each record's last change.
    last.delete(key);
    last.set(key, { tenantId, recordId, doc });
  };
  for (const event of events) {
    const tenant = event.metadata.tenantId;
    switch (event.type) {
      case 'MemoryWritten': {
        const { content, ...meta }: MemoryRecord = event.data.record;
        // Erased content (its key destroyed: a replay after a forget) is never indexed; the
        // record's later events in the same log remove it anyway.
        set(tenant, meta.id, meta.status === 'active' && !isUnreadableContent(content) ? toIndexDocument(meta, content) : null);
        break;
      }
      case 'MemoryPromoted': {
        const earlier = last.get(recordRef(tenant, event.data.id));
        const content = event.data.content ?? (earlier === undefined ? (await index.get(tenant, event.data.id))?.content : earlier.doc?.content);
        // Without content there is nothing to index: the record was removed (or erased) in the meantime.
        if (content !== undefined && !isUnreadableContent(content)) set(tenant, event.data.id, toIndexDocument(event.data.record, content));
        break;
      }
      default:
        for (const id of endedRecordIds(event)) set(tenant, id, null);
    }
  }
  const upserts: IndexDocument[] = [];
  const removals = new Map<string, string[]>();
  for (const { tenantId, recordId, doc } of last.values()) {
    if (doc !== null) upserts.push(doc);
    else removals.set(tenantId, [...(removals.get(tenantId) ?? []), recordId]);
  }
  if (upserts.length > 0) await index.upsert(upserts);
  for (const [tenantId, ids] of removals) await index.remove(tenantId, ids);
}

/** `indexEvents` of one event (replay folds the log one event at a time). */
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
  });
}

export const SUMMARY_BUILDER_GROUP = 'summary-builder';
/** How long one attempt waits for the index-builder before the bus retries the event. */
const INDEX_WAIT_MS = 5_000;
/**
 * Summaries lag writes by up to this much more, so that under load a batch holds many events
 * and each scope is rebuilt once for all of them (a rebuild reads the whole subject). 100 ms
 * left rebuilds at a quarter of the embedded runtime's CPU under 8 writers; under batch ingest
 * 500 ms still left them at 31 % of the pipeline thread (docs/pipeline.md, "Lingering").
 */
const SUMMARY_LINGER_MS = 1000;

/**
 * Summaries (issue 5) in a consumer group of their own, one step behind the index-builder:
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
  }, { lingerMs: SUMMARY_LINGER_MS });
}
