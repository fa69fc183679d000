/**
 * The vector-indexer (§6.7): keeps the vector index equal to the set of active records,
 * exactly as the index-builder keeps the keyword index (the same `indexChanges` fold of
 * each batch), with each record's vector embedded from the decrypted event's content, or the
 * writer's own vector of it (§6.7), or, through a promotion, the vector it already had. Vectors
 * are derived data: an ended or erased record's vector is removed, and replay rebuilds them.
 * Its own consumer group, so semantic visibility lags without slowing keyword visibility.
 */
import { SENDS_NOTHING, subscribeToMemoryEventBatches, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, isUnreadableContent, type MemoryEvent, type ServiceHandle } from '@gm/contracts';
import { indexChanges, recordPartition, unitVector, type PresentRecordState } from '@gm/domain';
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

/**
 * The writers' own vectors in a batch (§6.7), by tenant and record: the latest write's, which
 * stays the record's through the promotions after it in the batch (a promotion changes no
 * content). Used instead of embedding the content while they are of this deployment's model and
 * size, re-normalised (the edge did both; a command produced past it must not skew the ranking):
 * anything else, and a write without one, is embedded from its content.
 */
function ownVectors(events: readonly MemoryEvent[], model: Pick<EmbeddingModel, 'modelId' | 'dimensions'>): Map<string, Float32Array | undefined> {
  const own = new Map<string, Float32Array | undefined>();
  for (const event of events) {
    if (event.type !== 'MemoryWritten') continue;
    const { record, embedding } = event.data;
    const usable = embedding !== undefined && embedding.model === model.modelId && embedding.vector.length === model.dimensions;
    const unit = usable ? unitVector(embedding.vector) : undefined;
    own.set(recordKey(record.tenantId, record.id), unit === undefined ? undefined : Float32Array.from(unit));
  }
  return own;
}
const recordKey = (tenantId: string, recordId: string): string => JSON.stringify([tenantId, recordId]);

/**
 * The vectors already stored for the records a batch promoted without writing them: a promotion
 * changes no content, so the vector stays (a writer's own among them), by tenant and record.
 */
async function storedVectors(deps: VectorIndexerDeps, states: readonly PresentRecordState[]): Promise<Map<string, Float32Array>> {
  const byTenant = new Map<string, string[]>();
  for (const state of states) if (state.content === undefined) byTenant.set(state.tenantId, [...(byTenant.get(state.tenantId) ?? []), state.recordId]);
  const stored = new Map<string, Float32Array>();
  for (const [tenantId, ids] of byTenant) {
    for (const [recordId, vector] of await deps.vectors.vectorsOf(tenantId, ids, deps.model.modelId)) stored.set(recordKey(tenantId, recordId), vector);
  }
  return stored;
}

/**
 * One batch: every present record's vector — its writer's own, the one stored before a
 * promotion, or else its content embedded — upserted in one write; every absent one removed.
 */
export async function vectorizeEvents(deps: VectorIndexerDeps, events: readonly MemoryEvent[]): Promise<void> {
  const { present: states, removals } = indexChanges(events);
  const own = ownVectors(events, deps.model);
  const stored = await storedVectors(deps, states);
  const present: Array<{ doc: Omit<VectorDocument, 'vector'>; content: string; vector?: Float32Array }> = [];
  for (const state of states) {
    const content = state.content ?? (await deps.contentOf(state.tenantId, state.recordId));
    if (content === undefined || isUnreadableContent(content)) continue;
    const { meta } = state;
    const key = recordKey(meta.tenantId, meta.id);
    const vector = own.has(key) ? own.get(key) : stored.get(key);
    present.push({
      content,
      ...(vector === undefined ? {} : { vector }),
      doc: {
        tenantId: meta.tenantId, recordId: meta.id, partition: recordPartition(meta), subjectId: meta.subjectId, kind: meta.kind,
        purposes: meta.purposes, expiresAt: meta.expiresAt, version: meta.version, modelId: deps.model.modelId,
      },
    });
  }
  if (present.length > 0) {
    const toEmbed = present.filter((p) => p.vector === undefined);
    const embedded = toEmbed.length === 0 ? [] : await deps.model.embed(toEmbed.map((p) => p.content), 'document');
    let next = 0;
    await deps.vectors.upsert(present.map((p) => ({ ...p.doc, vector: p.vector ?? (embedded[next++] as Float32Array) })));
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
  return subscribeToMemoryEventBatches(deps.bus, VECTOR_INDEXER_GROUP, (batch) => vectorizeEvents(deps, batch.map((b) => b.event)), SENDS_NOTHING);
}
