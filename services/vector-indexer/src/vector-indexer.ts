/**
 * The vector-indexer (§6.7): keeps the vector index equal to the set of active records,
 * exactly as the index-builder keeps the keyword index (the same `indexChanges` fold of
 * each batch), with each record's vector embedded from the decrypted event's content. Vectors
 * are derived data: an ended or erased record's vector is removed, and replay rebuilds them.
 * Its own consumer group, so semantic visibility lags without slowing keyword visibility.
 */
import { subscribeToMemoryEventBatches, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, isUnreadableContent, type MemoryEvent, type ServiceHandle } from '@gm/contracts';
import { indexChanges, recordPartition } from '@gm/domain';
import type { EmbeddingModel } from '@gm/embedding';
import type { VectorDocument, VectorIndex } from '@gm/search-index';

export const VECTOR_INDEXER_GROUP = CONSUMER_GROUPS.vectorIndexer;

export interface VectorIndexerDeps {
  vectors: VectorIndex;
  model: EmbeddingModel;
  /**
   * The content of a record the batch promoted without carrying it: what the keyword index
   * holds (undefined when the record is gone, and then nothing changes).
   */
  contentOf(tenantId: string, recordId: string): Promise<string | undefined>;
}

/** One batch: every present record embedded in one call and upserted in one write; every absent one removed. */
export async function vectorizeEvents(deps: VectorIndexerDeps, events: readonly MemoryEvent[]): Promise<void> {
  const { present: states, removals } = indexChanges(events);
  const present: Array<{ doc: Omit<VectorDocument, 'vector'>; content: string }> = [];
  for (const state of states) {
    const content = state.content ?? (await deps.contentOf(state.tenantId, state.recordId));
    if (content === undefined || isUnreadableContent(content)) continue;
    const { meta } = state;
    present.push({
      content,
      doc: {
        tenantId: meta.tenantId, recordId: meta.id, partition: recordPartition(meta), subjectId: meta.subjectId, kind: meta.kind,
        purposes: meta.purposes, expiresAt: meta.expiresAt, version: meta.version, modelId: deps.model.modelId,
      },
    });
  }
  if (present.length > 0) {
    const vectors = await deps.model.embed(present.map((p) => p.content), 'document');
    await deps.vectors.upsert(present.map((p, i) => ({ ...p.doc, vector: vectors[i] as Float32Array })));
  }
  for (const [tenantId, ids] of removals) await deps.vectors.remove(tenantId, ids);
}

/**
 * Starts the group. Vectors of another model than this one (a deployment that changed its
 * model) would never be searched again, since kNN compares only vectors of the query's model:
 * then the group is first reset to the log's start and the index cleared, so every active
 * record is embedded again by this model — the same rebuild as a replay. Reset before clear: a
 * reset refused (another instance is consuming) leaves the old vectors in place, and a crash
 * between the two only repeats both at the next start.
 */
export async function startVectorIndexer(deps: VectorIndexerDeps & { bus: Bus; onRebuild?: (staleModelIds: string[]) => void }): Promise<ServiceHandle> {
  const stale = (await deps.vectors.modelIds()).filter((id) => id !== deps.model.modelId);
  if (stale.length > 0) {
    deps.onRebuild?.(stale);
    await deps.bus.resetGroup(VECTOR_INDEXER_GROUP);
    await deps.vectors.clear();
  }
  return subscribeToMemoryEventBatches(deps.bus, VECTOR_INDEXER_GROUP, (batch) => vectorizeEvents(deps, batch.map((b) => b.event)));
}
