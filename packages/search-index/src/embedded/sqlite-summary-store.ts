import { openSqlite, truncateWal, underLock } from '@gm/thread-lock';
import type { ScopeSummaries, Summary, SummaryHit, SummaryKey, SummaryQuery, SummarySource, SummaryStore } from '../summary-port.ts';
import { toFtsMatchExpression } from './fts-query.ts';
import { checkReplaceMany, epochMs, summaryDigest } from './summary-digest.ts';

export interface SqliteSummaryStoreOptions {
  /** Database file; created if missing. */
  file: string;
  /**
   * Erasure that is physically true (design §8.4): secure_delete, FTS5 secure-delete and a
   * TRUNCATE checkpoint in `eraseDeleted`. Default true; false only for the bench's A/B.
   */
  secureErasure?: boolean;
}

/*
 * Same tokenizer as the search index (see sqlite-search-index.ts). `summary_sources` lists
 * every (record → summary) edge, so `holding` is an index lookup; it is written in the same
 * transaction as the summary, so the two never disagree.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS summaries (
  rowid INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  partition_key TEXT NOT NULL,
  subject TEXT NOT NULL,
  purpose TEXT NOT NULL,
  text TEXT NOT NULL,
  derived_from TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  UNIQUE (tenant, partition_key, subject, purpose)
);
CREATE TABLE IF NOT EXISTS summary_sources (
  tenant TEXT NOT NULL,
  record_id TEXT NOT NULL,
  summary_rowid INTEGER NOT NULL,
  PRIMARY KEY (tenant, record_id, summary_rowid)
);
CREATE INDEX IF NOT EXISTS summary_sources_of ON summary_sources (summary_rowid);
CREATE VIRTUAL TABLE IF NOT EXISTS summaries_fts USING fts5(
  text, content = 'summaries', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS summaries_ai AFTER INSERT ON summaries BEGIN
  INSERT INTO summaries_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS summaries_ad AFTER DELETE ON summaries BEGIN
  INSERT INTO summaries_fts (summaries_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
  DELETE FROM summary_sources WHERE summary_rowid = old.rowid;
END;
`;

/* Every filter next to MATCH (or in the plain scan), as in the search index: nothing outside scope is scored or counted. */
const SEARCH_TEXT = `
SELECT s.*, bm25(summaries_fts) AS bm25_score
FROM summaries_fts JOIN summaries AS s ON s.rowid = summaries_fts.rowid
WHERE summaries_fts MATCH @match
  AND s.tenant = @tenant
  AND s.partition_key IN (SELECT value FROM json_each(@partitions))
  AND s.purpose = @purpose
  AND s.expires_at_ms > @now
  AND (@subject IS NULL OR s.subject = @subject)
ORDER BY bm25_score, s.partition_key, s.subject
LIMIT @limit
`;
const SEARCH_ALL = `
SELECT s.*, 0 AS bm25_score FROM summaries AS s
WHERE s.tenant = @tenant
  AND s.partition_key IN (SELECT value FROM json_each(@partitions))
  AND s.purpose = @purpose
  AND s.expires_at_ms > @now
  AND (@subject IS NULL OR s.subject = @subject)
ORDER BY s.updated_at_ms DESC, s.partition_key, s.subject
LIMIT @limit
`;

interface SummaryRow {
  tenant: string;
  partition_key: string;
  subject: string;
  purpose: string;
  text: string;
  derived_from: string;
  expires_at: string;
  expires_at_ms: number;
  updated_at: string;
  updated_at_ms: number;
}

interface SearchParams {
  match?: string;
  tenant: string;
  partitions: string;
  purpose: string;
  now: number;
  subject: string | null;
  limit: number;
}

const toRow = (s: Summary): SummaryRow => ({
  tenant: s.tenantId,
  partition_key: s.partition,
  subject: s.subjectId,
  purpose: s.purpose,
  text: s.text,
  derived_from: JSON.stringify(s.derivedFrom),
  expires_at: s.expiresAt,
  expires_at_ms: epochMs(s.expiresAt, 'expiresAt'),
  updated_at: s.updatedAt,
  updated_at_ms: epochMs(s.updatedAt, 'updatedAt'),
});

const fromRow = (r: SummaryRow): Summary => ({
  tenantId: r.tenant,
  partition: r.partition_key,
  subjectId: r.subject,
  purpose: r.purpose,
  text: r.text,
  // Only toRow writes this column, from typed values.
  derivedFrom: JSON.parse(r.derived_from) as SummarySource[],
  expiresAt: r.expires_at,
  updatedAt: r.updated_at,
});

export function createSqliteSummaryStore(options: SqliteSummaryStoreOptions): SummaryStore {
  const secureErasure = options.secureErasure ?? true;
  // A projection: `memctl replay` rebuilds it from the log (bus.db, FULL).
  const { db, writeLock } = openSqlite(options.file, { synchronous: 'NORMAL', secureDelete: secureErasure });
  db.exec(SCHEMA);
  // FTS5 keeps a deleted row's terms in its segments until a merge unless secure-delete is on (persistent, per table).
  // A literal: FTS5 reads this configuration value from the statement text, not from a bound parameter.
  underLock(writeLock, () => db.exec(`INSERT INTO summaries_fts (summaries_fts, rank) VALUES ('secure-delete', ${secureErasure ? 1 : 0})`));

  const deleteScope = db.prepare<[string, string, string]>('DELETE FROM summaries WHERE tenant = ? AND partition_key = ? AND subject = ?');
  const insert = db.prepare<[SummaryRow]>(`
    INSERT INTO summaries (tenant, partition_key, subject, purpose, text, derived_from, expires_at, expires_at_ms, updated_at, updated_at_ms)
    VALUES (@tenant, @partition_key, @subject, @purpose, @text, @derived_from, @expires_at, @expires_at_ms, @updated_at, @updated_at_ms)`);
  const insertSource = db.prepare<[string, string, number | bigint]>('INSERT OR IGNORE INTO summary_sources (tenant, record_id, summary_rowid) VALUES (?, ?, ?)');
  const getScope = db.prepare<[string, string, string], SummaryRow>(
    'SELECT * FROM summaries WHERE tenant = ? AND partition_key = ? AND subject = ? ORDER BY purpose',
  );
  const holdingStmt = db.prepare<[string, string], { partition_key: string; subject: string; purpose: string }>(`
    SELECT DISTINCT s.partition_key, s.subject, s.purpose FROM summary_sources AS src
    JOIN summaries AS s ON s.rowid = src.summary_rowid
    WHERE src.tenant = ? AND src.record_id IN (SELECT value FROM json_each(?))
    ORDER BY s.partition_key, s.subject, s.purpose`);
  const searchText = db.prepare<[SearchParams], SummaryRow & { bm25_score: number }>(SEARCH_TEXT);
  const searchAll = db.prepare<[SearchParams], SummaryRow & { bm25_score: number }>(SEARCH_ALL);
  const countAll = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM summaries');
  const countTenant = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM summaries WHERE tenant = ?');
  const all = db.prepare<[], SummaryRow>('SELECT * FROM summaries');

  const replaceTx = db.transaction((tenantId: string, scopes: readonly ScopeSummaries[]) => {
    for (const { partition, subjectId, summaries } of scopes) {
      deleteScope.run(tenantId, partition, subjectId);
      for (const summary of summaries) {
        const { lastInsertRowid } = insert.run(toRow(summary));
        for (const source of summary.derivedFrom) insertSource.run(tenantId, source.recordId, lastInsertRowid);
      }
    }
  });
  const replaceMany = async (tenantId: string, scopes: readonly ScopeSummaries[]): Promise<void> => {
    checkReplaceMany(tenantId, scopes);
    if (scopes.length > 0) underLock(writeLock, () => replaceTx.immediate(tenantId, scopes));
  };
  const clearTx = db.transaction(() => {
    db.exec('DELETE FROM summaries; DELETE FROM summary_sources;');
  });

  return {
    replace: (tenantId, partition, subjectId, summaries) => replaceMany(tenantId, [{ partition, subjectId, summaries }]),
    replaceMany,

    async remove(tenantId, partition, subjectId) {
      return underLock(writeLock, () => deleteScope.run(tenantId, partition, subjectId).changes);
    },

    async get(tenantId, partition, subjectId) {
      return getScope.all(tenantId, partition, subjectId).map(fromRow);
    },

    async search(query: SummaryQuery): Promise<SummaryHit[]> {
      if (query.partitions.length === 0) return [];
      const limit = Math.floor(query.limit);
      if (!(limit > 0)) return [];
      const params: SearchParams = {
        tenant: query.tenantId,
        partitions: JSON.stringify(query.partitions),
        purpose: query.purpose,
        now: epochMs(query.now, 'now'),
        subject: query.subjectId ?? null,
        limit,
      };
      if (query.text === undefined) {
        return searchAll.all(params).map(({ bm25_score: _none, ...row }) => ({ summary: fromRow(row), lexicalScore: 0 }));
      }
      const match = toFtsMatchExpression(query.text);
      if (match === null) return [];
      return searchText.all({ ...params, match }).map(({ bm25_score, ...row }) => ({
        summary: fromRow(row),
        lexicalScore: Math.max(-bm25_score, Number.MIN_VALUE),
      }));
    },

    async holding(tenantId, recordIds) {
      if (recordIds.length === 0) return [];
      return holdingStmt.all(tenantId, JSON.stringify(recordIds)).map(
        (r): SummaryKey => ({ tenantId, partition: r.partition_key, subjectId: r.subject, purpose: r.purpose }),
      );
    },

    async count(tenantId) {
      return (tenantId === undefined ? countAll.get() : countTenant.get(tenantId))?.n ?? 0;
    },

    async digest() {
      return summaryDigest(all.all().map(fromRow));
    },

    async clear() {
      underLock(writeLock, () => clearTx.immediate());
    },

    async eraseDeleted() {
      return truncateWal(db, writeLock, secureErasure);
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
