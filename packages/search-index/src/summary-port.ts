import type { CopyErasureState } from '@gm/contracts';
/**
 * The summary store port (§6.8): a derived store of extractive summaries, one per
 * (tenant, partition, subject, purpose), each naming the records it was built from. The
 * index-builder keeps it in step with the active records; deletion rebuilds or removes every
 * summary holding a deleted record. The embedded adapter is SQLite FTS5, the distributed one
 * an Elasticsearch index of its own (`<prefix>-summaries`). Both must pass `testSummaryStore`.
 */
export interface SummarySource {
  recordId: string;
  version: number;
  contentHash: string;
}

export interface Summary {
  tenantId: string;
  /** Partition key, as in IndexDocument: the only authorisation unit the store knows. */
  partition: string;
  subjectId: string;
  /** The one purpose it may be read for; every source allows it. */
  purpose: string;
  text: string;
  /** Exactly the records whose content the text holds. */
  derivedFrom: SummarySource[];
  /** The earliest expiry among the sources; from then on search does not return it. */
  expiresAt: string;
  updatedAt: string;
}

/** Which summary: no text, no content — what deletion evidence and probes may carry. */
export interface SummaryKey {
  tenantId: string;
  partition: string;
  subjectId: string;
  purpose: string;
}

export interface SummaryQuery {
  tenantId: string;
  /** Required and authoritative, as in SearchQuery: an empty list reads nothing. */
  partitions: string[];
  /** Only the summaries built for this purpose. */
  purpose: string;
  /** ISO time; summaries with expiresAt <= now are not returned. */
  now: string;
  /** Free text, any term, BM25. Absent: every summary in scope, newest first. */
  text?: string;
  subjectId?: string;
  limit: number;
}

export interface SummaryHit {
  summary: Summary;
  /** BM25 of `text` (> 0), or 0 when the query had no text. */
  lexicalScore: number;
}

/** One (partition, subject) of a tenant and the summaries it must hold from now on. */
export interface ScopeSummaries {
  partition: string;
  subjectId: string;
  summaries: Summary[];
}

export interface SummaryStore {
  /**
   * Makes the summaries of (tenant, partition, subject) exactly `summaries` (one per purpose):
   * purposes not listed are removed, an empty list removes them all. Every element must carry
   * the same tenant, partition and subject as the arguments. Idempotent.
   */
  replace(tenantId: string, partition: string, subjectId: string, summaries: Summary[]): Promise<void>;
  /**
   * `replace` of each scope, all at once (SQLite: one transaction; Elasticsearch: one bulk): a
   * batch of events rebuilds many scopes, and a write per scope was most of a rebuild's cost.
   * Every scope is checked first; one invalid scope rejects the call and nothing is written.
   */
  replaceMany(tenantId: string, scopes: readonly ScopeSummaries[]): Promise<void>;
  /** Removes every purpose's summary of (tenant, partition, subject); returns how many. */
  remove(tenantId: string, partition: string, subjectId: string): Promise<number>;
  /** Direct read, ordered by purpose. For the index-builder and probes, never the read path. */
  get(tenantId: string, partition: string, subjectId: string): Promise<Summary[]>;
  search(query: SummaryQuery): Promise<SummaryHit[]>;
  /** The summaries whose derivedFrom names any of these records, sorted, each once. */
  holding(tenantId: string, recordIds: string[]): Promise<SummaryKey[]>;
  count(tenantId?: string): Promise<number>;
  /** sha256 over every summary's (key, text hash, derivedFrom, expiresAt), sorted; updatedAt left out. */
  digest(): Promise<string>;
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
