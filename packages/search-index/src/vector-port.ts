import type { CopyErasureState } from '@gm/contracts';
/**
 * The vector index port (§6.7): one embedding per active record, searched by nearest
 * neighbour *inside* the same filters as the lexical index — partition, tenant, purpose,
 * expiry, kind, subject — never filtered after ranking, so an unauthorised record cannot take
 * a place among the k nearest. The embedded adapter is SQLite with an exact scan of the
 * filtered rows; the distributed one is Elasticsearch's `dense_vector` with kNN `filter`.
 * Both must pass `testVectorIndex` (packages/testing).
 */
import type { IndexDocument, RecordQueryFilter } from './port.ts';

/** The record's filter fields as the keyword index keeps them; `version` is the one the vector was computed from (an older one never replaces a newer). */
export interface VectorDocument extends Pick<IndexDocument, 'tenantId' | 'recordId' | 'partition' | 'subjectId' | 'kind' | 'purposes' | 'expiresAt' | 'version'> {
  /** The embedding model's id: vectors of different models are never compared. */
  modelId: string;
  /** Unit length (the embedding port normalises). */
  vector: Float32Array;
}

/** The lexical index's filters (partitions authoritative: an empty list reads nothing), plus the model and the vector. */
export interface VectorQuery extends RecordQueryFilter {
  modelId: string;
  vector: Float32Array;
  k: number;
}

export interface VectorHit {
  recordId: string;
  partition: string;
  /** Cosine similarity to the query vector, in [-1, 1]; hits come most similar first. */
  similarity: number;
}

export interface VectorIndex {
  /** Insert or replace by (tenantId, recordId); an older version never replaces a newer one. */
  upsert(docs: VectorDocument[]): Promise<void>;
  /** Removes by id; returns how many were removed. Idempotent. */
  remove(tenantId: string, recordIds: string[]): Promise<number>;
  /** The k nearest documents that pass every filter, most similar first (ties by recordId). */
  knn(query: VectorQuery): Promise<VectorHit[]>;
  /**
   * Resolves once every vector upserted before the call is visible to `knn`. A store that makes
   * upserts visible lazily (the vector-indexer's Elasticsearch index: at the next periodic
   * refresh) refreshes here, for a read that waited for the vector-indexer's commit and must
   * see what it waited for (a semantic search with a consistency token).
   */
  visible(): Promise<void>;
  /** Whether a record has a vector (verification probes only, never the read path). */
  has(tenantId: string, recordId: string): Promise<boolean>;
  /**
   * The stored vectors of these records that are of this model, by record id (the vector-indexer
   * only, never the read path): a promotion changes no content, so it keeps the vector it has,
   * a writer's own among them, instead of embedding the content again.
   */
  vectorsOf(tenantId: string, recordIds: string[], modelId: string): Promise<Map<string, Float32Array>>;
  count(tenantId?: string): Promise<number>;
  /** The models whose vectors the index holds, sorted: a start with another model rebuilds them (the vector-indexer). */
  modelIds(): Promise<string[]>;
  clear(): Promise<void>;
  /**
   * After deletions: makes their bytes physically gone where the store can, and says what is
   * true of them (§8.4): SQLite checkpoints and truncates its WAL (secure_delete zeroed the rows);
   * Elasticsearch expunges the documents deleted before `deletedBefore` (epoch ms) once no
   * retention lease holds them, and answers `pending_compaction` at once while one does.
   */
  eraseDeleted(deletedBefore?: number): Promise<CopyErasureState>;
  close(): Promise<void>;
}
