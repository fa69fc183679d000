import type { Bus } from '@gm/bus';
import { subscribeToMemoryEventBatches, subscribeToMemoryEvents } from '@gm/service-kit';
import { GovernedMemoryError, isUnreadableContent, type MemoryEvent, type MemoryRecord, type RecordMeta, type ServiceHandle } from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import type { IndexDocument, SearchIndex, SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
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

/** Keeps the index equal to the set of active records: active ⇒ indexed, anything else ⇒ removed. */
export async function indexEvent(index: SearchIndex, event: MemoryEvent): Promise<void> {
  const tenant = event.metadata.tenantId;
  switch (event.type) {
    case 'MemoryWritten': {
      const { content, ...meta }: MemoryRecord = event.data.record;
      // Erased content (its key destroyed: a replay after a forget) is never indexed; the
      // record's later events in the same log remove it anyway.
      if (meta.status === 'active' && !isUnreadableContent(content)) await index.upsert([toIndexDocument(meta, content)]);
      else await index.remove(tenant, [meta.id]);
      break;
    }
    case 'MemoryPromoted': {
      const content = event.data.content ?? (await index.get(tenant, event.data.id))?.content;
      // Without content there is nothing to index: the record was removed (or erased) in the meantime.
      if (content !== undefined && !isUnreadableContent(content)) await index.upsert([toIndexDocument(event.data.record, content)]);
      break;
    }
    case 'SubjectForgotten':
      await index.remove(tenant, event.data.records.map((r) => r.id));
      break;
    case 'MemorySuperseded':
    case 'MemoryExpired':
    case 'MemoryRevocationRequested':
    case 'MemoryTombstoned':
    case 'MemoryPurged':
      await index.remove(tenant, [event.data.id]);
      break;
    default: {
      const never: never = event;
      throw new Error(`unhandled event ${JSON.stringify(never)}`);
    }
  }
}

/**
 * After each index change the tenant's data generation is bumped again: the projector bumps
 * it first, and a search between the two would otherwise cache a result that misses the
 * change under the newer generation.
 */
export async function startIndexBuilder(deps: { bus: Bus; index: SearchIndex; state: StateStore }): Promise<ServiceHandle> {
  return subscribeToMemoryEvents(deps.bus, INDEX_BUILDER_GROUP, async (event) => {
    await indexEvent(deps.index, event);
    await deps.state.generations.bump(event.metadata.tenantId);
  });
}

export const SUMMARY_BUILDER_GROUP = 'summary-builder';
/** How long one attempt waits for the index-builder before the bus retries the event. */
const INDEX_WAIT_MS = 5_000;

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
  });
}
