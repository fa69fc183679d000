import { openSqlite, truncateWal, underLock } from '@gm/thread-lock';
import { GovernedMemoryError } from '@gm/contracts';
import type { MemoryKind, Provenance } from '@gm/contracts';
import type { IndexDocument, SearchHit, SearchIndex, SearchQuery } from '../port.ts';
import { indexDigest } from './digest.ts';
import { toFtsMatchExpression } from './fts-query.ts';
import { rankPage, sourcePurposes } from './ranked-subject.ts';

export interface SqliteSearchIndexOptions {
  /** Database file; created if missing. */
  file: string;
  /**
   * Erasure that is physically true (design §8.4): secure_delete, FTS5 secure-delete and a
   * TRUNCATE checkpoint in `eraseDeleted`. Default true; false only for the bench's A/B.
   */
  secureErasure?: boolean;
}

/*
 * Tokenizer: `porter unicode61 remove_diacritics 2`.
 * - unicode61 splits on Unicode letter/digit boundaries and case-folds beyond ASCII;
 *   remove_diacritics 2 makes "cafe" find "café" whether the accent is precomposed or not.
 * - porter stems English suffixes ("prefers", "preferences" -> "prefer"). Memories are short
 *   natural-language notes queried with different word forms by agents, so recall matters
 *   more than exact-form precision; BM25 and the later ranking stages keep precision. The
 *   price is that porter applies English rules to every language (it never loses a match,
 *   it can only conflate); the Elasticsearch adapter should use the equivalent analyzer
 *   (standard + lowercase + asciifolding + porter_stem) so the runtimes rank alike.
 *
 * The FTS table uses external content (documents is the single copy of the text) and is kept
 * in step by triggers, so every write path (upsert, remove, clear) updates both or neither.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS documents (
  rowid INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  record_id TEXT NOT NULL,
  partition_key TEXT NOT NULL,
  subject TEXT NOT NULL,
  kind TEXT NOT NULL,
  purposes TEXT NOT NULL,
  content TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  confidence REAL NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  version INTEGER NOT NULL,
  provenance TEXT NOT NULL,
  UNIQUE (tenant, record_id)
);
CREATE INDEX IF NOT EXISTS documents_scope ON documents (tenant, partition_key, expires_at_ms);
-- A summary rebuild ranks one subject's documents: without this it scanned every document of
-- the tenant's partition (20,000 rows for a 400-record subject in bench:profile).
CREATE INDEX IF NOT EXISTS documents_subject ON documents (tenant, partition_key, subject, record_id);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
  content, content = 'documents', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
  INSERT INTO documents_fts (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
  INSERT INTO documents_fts (documents_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER IF NOT EXISTS documents_au AFTER UPDATE ON documents BEGIN
  INSERT INTO documents_fts (documents_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
  INSERT INTO documents_fts (rowid, content) VALUES (new.rowid, new.content);
END;
`;

/* Equal version replaces (a re-delivered event rewrites the same state); older never does. */
const UPSERT = `
INSERT INTO documents (tenant, record_id, partition_key, subject, kind, purposes, content, content_hash,
  confidence, created_at, expires_at, expires_at_ms, version, provenance)
VALUES (@tenant, @record_id, @partition_key, @subject, @kind, @purposes, @content, @content_hash,
  @confidence, @created_at, @expires_at, @expires_at_ms, @version, @provenance)
ON CONFLICT (tenant, record_id) DO UPDATE SET
  partition_key = excluded.partition_key, subject = excluded.subject, kind = excluded.kind,
  purposes = excluded.purposes, content = excluded.content, content_hash = excluded.content_hash,
  confidence = excluded.confidence, created_at = excluded.created_at, expires_at = excluded.expires_at,
  expires_at_ms = excluded.expires_at_ms, version = excluded.version, provenance = excluded.provenance
WHERE excluded.version >= documents.version
`;

/*
 * Every filter lives in this one statement, next to MATCH, so a document outside the caller's
 * scope is never scored, counted against LIMIT or returned. (FTS5 corpus statistics — document
 * count, average length, term frequencies for IDF — are table-wide; BM25 cannot avoid that.)
 * Lists are bound as JSON and expanded with json_each, which keeps the statement prepared once.
 */
const SEARCH = `
SELECT d.*, bm25(documents_fts) AS bm25_score
FROM documents_fts
JOIN documents AS d ON d.rowid = documents_fts.rowid
WHERE documents_fts MATCH @match
  AND d.tenant = @tenant
  AND d.partition_key IN (SELECT value FROM json_each(@partitions))
  AND EXISTS (SELECT 1 FROM json_each(d.purposes) WHERE value = @purpose)
  AND d.expires_at_ms > @now
  AND (@subject IS NULL OR d.subject = @subject)
  AND (@kinds IS NULL OR d.kind IN (SELECT value FROM json_each(@kinds)))
ORDER BY bm25_score, d.record_id
LIMIT @limit
`;

interface DocumentRow {
  tenant: string;
  record_id: string;
  partition_key: string;
  subject: string;
  kind: string;
  purposes: string;
  content: string;
  content_hash: string;
  confidence: number;
  created_at: string;
  expires_at: string;
  expires_at_ms: number;
  version: number;
  provenance: string;
}

interface SearchParams {
  match: string;
  tenant: string;
  partitions: string;
  purpose: string;
  now: number;
  subject: string | null;
  kinds: string | null;
  limit: number;
}

function epochMs(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) {
    throw new GovernedMemoryError('MEM_VALIDATION', `${field} is not a valid time`);
  }
  return ms;
}

function toRow(doc: IndexDocument): DocumentRow {
  return {
    tenant: doc.tenantId,
    record_id: doc.recordId,
    partition_key: doc.partition,
    subject: doc.subjectId,
    kind: doc.kind,
    purposes: JSON.stringify(doc.purposes),
    content: doc.content,
    content_hash: doc.contentHash,
    confidence: doc.confidence,
    // The ISO strings are kept verbatim (get returns what was written); the epoch-ms copy is
    // what the expiry filter compares, so "+02:00" and "Z" times order correctly.
    created_at: doc.createdAt,
    expires_at: doc.expiresAt,
    expires_at_ms: epochMs(doc.expiresAt, 'expiresAt'),
    version: doc.version,
    provenance: JSON.stringify(doc.provenance),
  };
}

function fromRow(row: DocumentRow): IndexDocument {
  return {
    tenantId: row.tenant,
    recordId: row.record_id,
    partition: row.partition_key,
    subjectId: row.subject,
    // Only toRow writes these columns, from typed values, so reading them back is type-safe.
    kind: row.kind as MemoryKind,
    purposes: JSON.parse(row.purposes) as string[],
    content: row.content,
    contentHash: row.content_hash,
    confidence: row.confidence,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    version: row.version,
    provenance: JSON.parse(row.provenance) as Provenance[],
  };
}

export function createSqliteSearchIndex(options: SqliteSearchIndexOptions): SearchIndex {
  const secureErasure = options.secureErasure ?? true;
  // A projection: `memctl replay` rebuilds it from the log (bus.db, FULL).
  const { db, writeLock } = openSqlite(options.file, { synchronous: 'NORMAL', secureDelete: secureErasure });
  db.exec(SCHEMA);
  // FTS5 keeps a deleted row's terms in its segments until a merge unless secure-delete is on (persistent, per table).
  // A literal: FTS5 reads this configuration value from the statement text, not from a bound parameter.
  underLock(writeLock, () => db.exec(`INSERT INTO documents_fts (documents_fts, rank) VALUES ('secure-delete', ${secureErasure ? 1 : 0})`));

  const upsertStmt = db.prepare<[DocumentRow]>(UPSERT);
  const upsertAll = db.transaction((rows: DocumentRow[]) => {
    for (const row of rows) upsertStmt.run(row);
  });
  const removeStmt = db.prepare<[string, string]>(
    'DELETE FROM documents WHERE tenant = ? AND record_id IN (SELECT value FROM json_each(?))',
  );
  const getStmt = db.prepare<[string, string], DocumentRow>(
    'SELECT * FROM documents WHERE tenant = ? AND record_id = ?',
  );
  // The subject's rank keys only (no content): a page is ranked from these, then read whole.
  const subjectKeysStmt = db.prepare<[string, string, string], Pick<DocumentRow, 'record_id' | 'kind' | 'purposes' | 'confidence' | 'created_at' | 'expires_at_ms'>>(
    'SELECT record_id, kind, purposes, confidence, created_at, expires_at_ms FROM documents WHERE tenant = ? AND partition_key = ? AND subject = ?',
  );
  const manyStmt = db.prepare<[string, string], DocumentRow>(
    'SELECT * FROM documents WHERE tenant = ? AND record_id IN (SELECT value FROM json_each(?))',
  );
  const subjectKeys = (tenantId: string, partition: string, subjectId: string) => subjectKeysStmt.all(tenantId, partition, subjectId).map((r) => ({
    recordId: r.record_id, kind: r.kind, purposes: JSON.parse(r.purposes) as string[], confidence: r.confidence, createdAt: r.created_at, expiresAtMs: r.expires_at_ms,
  }));
  const searchStmt = db.prepare<[SearchParams], DocumentRow & { bm25_score: number }>(SEARCH);
  const countAllStmt = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM documents');
  const countTenantStmt = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM documents WHERE tenant = ?');
  const digestStmt = db.prepare<[], { tenant: string; record_id: string; version: number; content_hash: string; partition_key: string }>(
    'SELECT tenant, record_id, version, content_hash, partition_key FROM documents',
  );
  const clearStmt = db.prepare('DELETE FROM documents');

  return {
    async upsert(docs) {
      // Convert first so an invalid document rejects the batch before anything is written.
      const rows = docs.map(toRow);
      underLock(writeLock, () => upsertAll.immediate(rows));
    },

    async remove(tenantId, recordIds) {
      if (recordIds.length === 0) return 0;
      // `changes` counts rows this DELETE removed (not trigger work), so repeats return 0.
      return underLock(writeLock, () => removeStmt.run(tenantId, JSON.stringify(recordIds)).changes);
    },

    async get(tenantId, recordId) {
      const row = getStmt.get(tenantId, recordId);
      return row === undefined ? null : fromRow(row);
    },

    async subjectPurposes(query) {
      return sourcePurposes(subjectKeys(query.tenantId, query.partition, query.subjectId), query.kinds, epochMs(query.now, 'now'));
    },

    async subjectDocumentsRanked(query) {
      const { ids, next } = rankPage(subjectKeys(query.tenantId, query.partition, query.subjectId), query, epochMs(query.now, 'now'));
      if (ids.length === 0) return { documents: [] };
      const byId = new Map(manyStmt.all(query.tenantId, JSON.stringify(ids)).map((row) => [row.record_id, fromRow(row)]));
      // Another connection may remove a document between the two reads: it is left out, as a moment later.
      const documents = ids.flatMap((id) => byId.get(id) ?? []);
      return next === undefined ? { documents } : { documents, next };
    },

    async search(query: SearchQuery): Promise<SearchHit[]> {
      // No authorised partition means nothing may be read — not even a query plan runs.
      if (query.partitions.length === 0) return [];
      const limit = Math.floor(query.limit);
      // SQLite treats a negative LIMIT as "no limit"; the port means "at most limit".
      if (!(limit > 0)) return [];
      const match = toFtsMatchExpression(query.text);
      if (match === null) return [];
      const rows = searchStmt.all({
        match,
        tenant: query.tenantId,
        partitions: JSON.stringify(query.partitions),
        purpose: query.purpose,
        now: epochMs(query.now, 'now'),
        subject: query.subjectId ?? null,
        // An explicit empty list allows no kind (fail closed), unlike an absent one.
        kinds: query.kinds === undefined ? null : JSON.stringify(query.kinds),
        limit,
      });
      return rows.map(({ bm25_score, ...row }) => ({
        doc: fromRow(row),
        // FTS5 bm25 is negative-is-better and clamps IDF above zero, so the negation is
        // positive; the floor only guards the port's "> 0" promise against rounding.
        lexicalScore: Math.max(-bm25_score, Number.MIN_VALUE),
      }));
    },

    async count(tenantId) {
      const row = tenantId === undefined ? countAllStmt.get() : countTenantStmt.get(tenantId);
      return row?.n ?? 0;
    },

    async digest() {
      return indexDigest(
        digestStmt.all().map((r) => ({
          tenantId: r.tenant,
          recordId: r.record_id,
          version: r.version,
          contentHash: r.content_hash,
          partition: r.partition_key,
        })),
      );
    },

    async clear() {
      underLock(writeLock, () => clearStmt.run());
    },

    async eraseDeleted() {
      return truncateWal(db, writeLock, secureErasure);
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
