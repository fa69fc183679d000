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

/** Where a page of `subjectDocumentsRanked` ended; pass it back for the next page. Opaque. */
export type RankCursor = string;

/** The summary sources of one (partition, subject) for one purpose (SearchIndex.subjectDocumentsRanked). */
export interface RankedSubjectQuery {
  tenantId: string;
  partition: string;
  subjectId: string;
  /** Only documents that allow this purpose. */
  purpose: string;
  /** Only documents of these kinds (an empty list matches none). */
  kinds: readonly MemoryKind[];
  /** ISO time; documents with expiresAt <= now are left out. */
  now: string;
  /** The page begins after this cursor: the previous page's `next`. */
  after?: RankCursor;
  limit: number;
}

export interface RankedPage {
  documents: IndexDocument[];
  /** Present when the page is full: there may be more after it. */
  next?: RankCursor;
}

export interface SearchIndex {
  /** Insert or replace by (tenantId, recordId); an older version never replaces a newer one. */
  upsert(docs: IndexDocument[]): Promise<void>;
  /** Removes by id; returns how many documents were removed. Idempotent. */
  remove(tenantId: string, recordIds: string[]): Promise<number>;
  /** Direct read by id, bypassing search. For verification probes only, never the read path. */
  get(tenantId: string, recordId: string): Promise<IndexDocument | null>;
  /**
   * The purposes that the (partition, subject)'s documents of `kinds`, not expired at `now`,
   * allow, sorted: the summaries a rebuild must build (§6.8). Never the read path.
   */
  subjectPurposes(query: Omit<RankedSubjectQuery, 'purpose' | 'after' | 'limit'>): Promise<string[]>;
  /**
   * One page of the (partition, subject)'s documents for a purpose, best first in the summary
   * order (contracts' compareSummaryRank: confidence as a 32-bit float, then createdAt newer
   * first, then recordId), so a summary rebuild reads the top of a subject, not all of it.
   * Never the read path.
   */
  subjectDocumentsRanked(query: RankedSubjectQuery): Promise<RankedPage>;
  search(query: SearchQuery): Promise<SearchHit[]>;
  count(tenantId?: string): Promise<number>;
  /** sha256 over every document's (tenant, id, version, contentHash, partition), sorted. */
  digest(): Promise<string>;
  /** Drops every document (replay rebuilds the index from the log). */
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
