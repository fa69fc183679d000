import Database from 'better-sqlite3';
import { Client } from '@elastic/elasticsearch';
import type { estypes } from '@elastic/elasticsearch';
import { toIndexDocument } from '@gm/index-builder';
import type { IndexDocument } from '@gm/search-index';
import { PURPOSE, RESOURCE, contentOf, distinctQueries, syntheticMeta, tenantOf } from './corpus.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

/**
 * The search engines on their own, with the documents and queries the runtimes get: bulk
 * load up to each dataset size, then the same filtered BM25 query the adapters send.
 */
export interface RawSearchStep {
  records: number;
  /** Documents/s of this step's load (ES: bulks of 1000 then one refresh; SQLite: transactions of 1000). */
  loadPerSecond: number;
  query: Summary;
}
export interface RawSearchResult {
  elasticsearch: RawSearchStep[];
  sqliteFts: RawSearchStep[];
}

/** The index-builder asks for 4× the API limit (10 by default). */
export const INDEX_LIMIT = 40;
const BATCH = 1000;
const WARMUP = 20;

/** The same query texts for the raw engines and both runtimes at one dataset size. */
export const queriesFor = (records: number, searches: number): string[] => distinctQueries(searches, records);
export const warmupQueriesFor = (records: number): string[] => distinctQueries(WARMUP, records + 1);

/** What the policy decision point grants a bench capability: the team partition and its own private one. */
export const partitionsOf = (tenant: string): string[] => [
  `t:${tenant}/r:${RESOURCE.kind}:${RESOURCE.id}/v:team`, `t:${tenant}/r:${RESOURCE.kind}:${RESOURCE.id}/v:private/o:bench`,
];

export function documentOf(i: number, tenants: number, now: Date): IndexDocument {
  return toIndexDocument(syntheticMeta(i, tenants, now), contentOf(i));
}

// The Elasticsearch adapter's analyzer and mapping (packages/search-index), so both score alike.
const ES_SETTINGS: estypes.IndicesIndexSettings = {
  number_of_shards: 1, auto_expand_replicas: '0-1',
  analysis: {
    tokenizer: { gm_words: { type: 'pattern', pattern: '[^\\p{L}\\p{N}\\p{M}]+' } },
    analyzer: { gm_content: { type: 'custom', tokenizer: 'gm_words', filter: ['lowercase', 'asciifolding', 'porter_stem'] } },
  },
};
const keyword = { type: 'keyword' } as const;
const ES_MAPPINGS: estypes.MappingTypeMapping = {
  dynamic: 'strict',
  properties: {
    tenantId: keyword, recordId: keyword, partition: keyword, subjectId: keyword, kind: keyword, purposes: keyword,
    content: { type: 'text', analyzer: 'gm_content' }, contentHash: keyword, confidence: { type: 'float' },
    createdAt: { type: 'date' }, expiresAt: { type: 'date' }, expiresAtMs: { type: 'long' }, version: { type: 'long' },
    provenance: { type: 'object', enabled: false },
  },
};

const SQLITE_SCHEMA = `
CREATE TABLE documents (rowid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, record_id TEXT NOT NULL, partition_key TEXT NOT NULL,
  subject TEXT NOT NULL, kind TEXT NOT NULL, purposes TEXT NOT NULL, content TEXT NOT NULL, content_hash TEXT NOT NULL,
  confidence REAL NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, expires_at_ms INTEGER NOT NULL,
  version INTEGER NOT NULL, provenance TEXT NOT NULL, UNIQUE (tenant, record_id));
CREATE INDEX documents_scope ON documents (tenant, partition_key, expires_at_ms);
CREATE VIRTUAL TABLE documents_fts USING fts5(content, content = 'documents', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER documents_ai AFTER INSERT ON documents BEGIN
  INSERT INTO documents_fts (rowid, content) VALUES (new.rowid, new.content);
END;`;
const SQLITE_SEARCH = `
SELECT d.*, bm25(documents_fts) AS score FROM documents_fts JOIN documents AS d ON d.rowid = documents_fts.rowid
WHERE documents_fts MATCH @match AND d.tenant = @tenant
  AND d.partition_key IN (SELECT value FROM json_each(@partitions))
  AND EXISTS (SELECT 1 FROM json_each(d.purposes) WHERE value = @purpose) AND d.expires_at_ms > @now
ORDER BY score, d.record_id LIMIT @limit`;

const match = (text: string) => text.split(' ').map((t) => `"${t}"`).join(' OR ');

export async function measureRawSearch(
  esUrl: string, esIndex: string, sqliteFile: string, sizes: number[], tenants: number, searches: number,
): Promise<RawSearchResult> {
  const es = new Client({ node: esUrl, maxRetries: 0 });
  const db = new Database(sqliteFile);
  const result: RawSearchResult = { elasticsearch: [], sqliteFts: [] };
  const now = new Date();
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SQLITE_SCHEMA);
    const insert = db.prepare(`INSERT INTO documents (tenant, record_id, partition_key, subject, kind, purposes, content, content_hash,
      confidence, created_at, expires_at, expires_at_ms, version, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const insertMany = db.transaction((docs: IndexDocument[]) => {
      for (const d of docs) {
        insert.run(d.tenantId, d.recordId, d.partition, d.subjectId, d.kind, JSON.stringify(d.purposes), d.content, d.contentHash,
          d.confidence, d.createdAt, d.expiresAt, Date.parse(d.expiresAt), d.version, JSON.stringify(d.provenance));
      }
    });
    const search = db.prepare(SQLITE_SEARCH);
    await es.indices.create({ index: esIndex, settings: ES_SETTINGS, mappings: ES_MAPPINGS });

    let loaded = 0;
    for (const size of sizes) {
      let esMs = 0;
      let sqliteMs = 0;
      for (let from = loaded; from < size; from += BATCH) {
        const docs = Array.from({ length: Math.min(BATCH, size - from) }, (_, j) => documentOf(from + j, tenants, now));
        let started = performance.now();
        const response = await es.bulk({
          operations: docs.flatMap((d) => [{ index: { _index: esIndex, _id: `${d.tenantId}/${d.recordId}` } }, { ...d, expiresAtMs: Date.parse(d.expiresAt) }]),
        });
        if (response.errors) throw new Error('raw Elasticsearch bulk reported item errors');
        esMs += performance.now() - started;
        started = performance.now();
        insertMany(docs);
        sqliteMs += performance.now() - started;
      }
      const refreshStarted = performance.now();
      await es.indices.refresh({ index: esIndex });
      esMs += performance.now() - refreshStarted;
      const added = size - loaded;
      loaded = size;
      progress(`raw search engines: loaded ${size} documents (ES ${perSecond(added, esMs).toFixed(0)}/s, SQLite ${perSecond(added, sqliteMs).toFixed(0)}/s)`);

      const esQuery = (text: string, j: number) => {
        const tenant = tenantOf(j, tenants);
        return es.search({
          index: esIndex, size: INDEX_LIMIT, track_total_hits: false, track_scores: true, allow_partial_search_results: false,
          query: {
            bool: {
              filter: [
                { term: { tenantId: tenant } }, { terms: { partition: partitionsOf(tenant) } }, { term: { purposes: PURPOSE } },
                { range: { expiresAtMs: { gt: Date.now() } } },
              ],
              must: [{ match: { content: { query: text, operator: 'or', zero_terms_query: 'none' } } }],
            },
          },
          sort: [{ _score: { order: 'desc' } }, { recordId: { order: 'asc' } }],
        });
      };
      const sqliteQuery = (text: string, j: number) => {
        const tenant = tenantOf(j, tenants);
        return search.all({
          match: match(text), tenant, partitions: JSON.stringify(partitionsOf(tenant)), purpose: PURPOSE, now: Date.now(), limit: INDEX_LIMIT,
        });
      };
      for (const [j, q] of warmupQueriesFor(size).entries()) {
        await esQuery(q, j);
        sqliteQuery(q, j);
      }
      const esMsList: number[] = [];
      const sqliteMsList: number[] = [];
      for (const [j, q] of queriesFor(size, searches).entries()) {
        let started = performance.now();
        await esQuery(q, j);
        esMsList.push(performance.now() - started);
        started = performance.now();
        sqliteQuery(q, j);
        sqliteMsList.push(performance.now() - started);
      }
      result.elasticsearch.push({ records: size, loadPerSecond: perSecond(added, esMs), query: summarize(esMsList) });
      result.sqliteFts.push({ records: size, loadPerSecond: perSecond(added, sqliteMs), query: summarize(sqliteMsList) });
      progress(`raw search engines: ${searches} queries at ${size} records (ES p50 ${summarize(esMsList).p50.toFixed(2)} ms, SQLite p50 ${summarize(sqliteMsList).p50.toFixed(2)} ms)`);
    }
    return result;
  } finally {
    db.close();
    await es.indices.delete({ index: esIndex, ignore_unavailable: true }).catch(() => undefined);
    await es.close();
  }
}
