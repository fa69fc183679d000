import type { Bus } from '@gm/bus';
import { subscribeToMemoryEvents } from '@gm/service-kit';
import { type MemoryEvent, type MemoryRecord, type RecordMeta, type ServiceHandle } from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import type { IndexDocument, SearchIndex, SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { summarizeEvent } from './summaries.ts';

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
      if (meta.status === 'active') await index.upsert([toIndexDocument(meta, content)]);
      else await index.remove(tenant, [meta.id]);
      break;
    }
    case 'MemoryPromoted': {
      const content = event.data.content ?? (await index.get(tenant, event.data.id))?.content;
      // Without content there is nothing to index: the record was removed in the meantime.
      if (content !== undefined) await index.upsert([toIndexDocument(event.data.record, content)]);
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
 * change under the newer generation. With a summary store, the summaries of every scope the
 * event touched are rebuilt in the same handler, after the index (issue 5): they are folded
 * from the same events in the same order, and read-your-writes covers them too.
 */
export async function startIndexBuilder(deps: { bus: Bus; index: SearchIndex; state: StateStore; summaries?: SummaryStore }): Promise<ServiceHandle> {
  const { summaries } = deps;
  return subscribeToMemoryEvents(deps.bus, INDEX_BUILDER_GROUP, async (event) => {
    await indexEvent(deps.index, event);
    if (summaries !== undefined) await summarizeEvent({ index: deps.index, summaries, state: deps.state }, event);
    await deps.state.generations.bump(event.metadata.tenantId);
  });
}
