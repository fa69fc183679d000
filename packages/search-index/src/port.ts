import type { MemoryKind, Provenance, CopyErasureState } from '@gm/contracts';

/**
 * The search index port: searchable copies of *active* records. The embedded adapter is
 * SQLite FTS5 (BM25); the distributed one is Elasticsearch. Both must pass
 * `testSearchIndex` (packages/testing).
 */
export interface IndexDocument {
  tenantId: string;
  recordId: string;
  /** Partition key (see @gm/domain `partitionKey`). The only authorisation unit the index knows. */
  partition: string;
  subjectId: string;
  kind: MemoryKind;
  purposes: string[];
  content: string;
  contentHash: string;
  confidence: number;
  createdAt: string;
  expiresAt: string;
  version: number;
  provenance: Provenance[];
}

/**
 * The filters every query of a record index applies inside its search, never after it
 * (partition-first, §6.3): the lexical index's and the vector index's alike.
 */
export interface RecordQueryFilter {
  tenantId: string;
  /**
   * Required and authoritative: documents outside these partitions are never read, scored
   * or returned. An empty list returns no hits without touching the index.
   */
  partitions: string[];
  /** Only documents whose purposes include this one. */
  purpose: string;
  /** ISO time; documents with expiresAt <= now are not returned. */
  now: string;
  subjectId?: string;
  kinds?: MemoryKind[];
}

export interface SearchQuery extends RecordQueryFilter {
  /** Free text; matched term by term (any term), ranked by BM25. */
  text: string;
  limit: number;
}

export interface SearchHit {
  doc: IndexDocument;
  /** Higher is better; > 0 for every hit (a hit matched at least one term). */
  lexicalScore: number;
}

export interface SearchIndex {
  /** Insert or replace by (tenantId, recordId); an older version never replaces a newer one. */
  upsert(docs: IndexDocument[]): Promise<void>;
  /** Removes by id; returns how many documents were removed. Idempotent. */
  remove(tenantId: string, recordIds: string[]): Promise<number>;
  /** Direct read by id, bypassing search. For verification probes only, never the read path. */
  get(tenantId: string, recordId: string): Promise<IndexDocument | null>;
  /**
   * Every document of one (partition, subject), whatever its expiry, ordered by recordId —
   * the sources the index-builder summarises. Bypasses search: never the read path.
   */
  subjectDocuments(tenantId: string, partition: string, subjectId: string): Promise<IndexDocument[]>;
  search(query: SearchQuery): Promise<SearchHit[]>;
  count(tenantId?: string): Promise<number>;
  /** sha256 over every document's (tenant, id, version, contentHash, partition), sorted. */
  digest(): Promise<string>;
  /** Drops every document (replay rebuilds the index from the log). */
  clear(): Promise<void>;
  /**
   * After deletions: makes their bytes physically gone where the store can, and says what is
   * true of them (§8.4): SQLite checkpoints and truncates its WAL (secure_delete zeroed the rows);
   * Elasticsearch expunges deleted documents, or they wait for a segment merge.
   */
  eraseDeleted(): Promise<CopyErasureState>;
  close(): Promise<void>;
}
