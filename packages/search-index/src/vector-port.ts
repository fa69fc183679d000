import type { MemoryKind } from '@gm/contracts';

/**
 * The vector index port (issue 14): one embedding per active record, searched by nearest
 * neighbour *inside* the same filters as the lexical index — partition, tenant, purpose,
 * expiry, kind, subject — never filtered after ranking, so an unauthorised record cannot take
 * a place among the k nearest. The embedded adapter is SQLite with an exact scan of the
 * filtered rows; the distributed one is Elasticsearch's `dense_vector` with kNN `filter`.
 * Both must pass `testVectorIndex` (packages/testing).
 */
export interface VectorDocument {
  tenantId: string;
  recordId: string;
  partition: string;
  subjectId: string;
  kind: MemoryKind;
  purposes: string[];
  expiresAt: string;
  /** The record version the vector was computed from: an older one never replaces a newer. */
  version: number;
  /** The embedding model's id: vectors of different models are never compared. */
  modelId: string;
  /** Unit length (the embedding port normalises). */
  vector: Float32Array;
}

export interface VectorQuery {
  tenantId: string;
  /** Required and authoritative, as for the lexical index: an empty list reads nothing. */
  partitions: string[];
  purpose: string;
  /** ISO time; documents with expiresAt <= now are not candidates. */
  now: string;
  subjectId?: string;
  kinds?: MemoryKind[];
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
  /** Whether a record has a vector (verification probes only, never the read path). */
  has(tenantId: string, recordId: string): Promise<boolean>;
  count(tenantId?: string): Promise<number>;
  clear(): Promise<void>;
  close(): Promise<void>;
}
