import { errors } from '@elastic/elasticsearch';
import type { estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';
import type { IndexDocument, RankedSubjectQuery, SearchHit, SearchIndex, SearchQuery } from '../port.ts';
import { indexDigest } from '../embedded/digest.ts';
import { decodeRankCursor, encodeRankCursor, type RankPosition } from '../rank-cursor.ts';
import { ManagedIndex } from './es-managed-index.ts';
import { Refresher } from './es-refresher.ts';
import { RECORD_FILTER_PROPERTIES, bulkThroughAlias, checkUpserted, countDocuments, countRemoved, indexNamesOf, isIndexMissing, recordDeleteOps, recordDocId, requireComplete, versionedIndexOps } from './es-support.ts';

export interface ElasticsearchSearchIndexOptions {
  /** Elasticsearch URL, e.g. http://127.0.0.1:19200. */
  /** One node's URL, or the URLs of every node of one cluster. */
  node: string | readonly string[];
  /** Lower-case prefix of this index's names; one deployment (or test) per prefix. */
  indexPrefix: string;
  /**
   * How an upsert or remove becomes searchable before it returns (read-your-writes either way).
   * `true` (default) refreshes at once — one refresh shared by concurrent writers
   * (es-refresher.ts) — as deletion verification (§8.3) and revocation convergence (§7)
   * need; `'wait_for'` waits for the next periodic refresh instead (RECORDS_REFRESH_INTERVAL),
   * which every write of that interval shares: the index-builder's (design §9).
   */
  refresh?: true | 'wait_for';
}

/**
 * How often the keyword index refreshes on its own. The index-builder's writes wait for the next
 * of these (refresh 'wait_for') instead of forcing one each: Elasticsearch spends 40–80 ms of
 * CPU on a refresh here (docs/sizing.md), and a synchronous write had paid for about one of its
 * own. Every write of an interval now shares one refresh, so the keyword index costs at most ten
 * refreshes a second however many writes arrive, for about half an interval more per write. A
 * shard with nothing new to refresh costs next to nothing.
 */
export const RECORDS_REFRESH_INTERVAL = '100ms';
const RECORDS_DYNAMIC_SETTINGS: estypes.IndicesIndexSettings = { refresh_interval: RECORDS_REFRESH_INTERVAL };

/**
 * Writes go to an alias with `require_alias`, so a write after someone deleted the index can
 * never auto-create one with dynamic mappings (partition as analysed text would silently break
 * the filters); the concrete index carries the mapping generation, so a new mapping can be
 * built beside the old one by replay.
 */
export const esIndexNames = (indexPrefix: string): { alias: string; concrete: string } => indexNamesOf(indexPrefix, 'records');

/*
 * The content analyzer mirrors the SQLite adapter's `porter unicode61 remove_diacritics 2`, so
 * both runtimes match the same word forms:
 * - tokens are runs of letters, digits and marks, everything else separates (as unicode61).
 *   Not the `standard` tokenizer: its UAX#29 rules keep "content:alpha" or "example.com" as
 *   one token, where SQLite finds "alpha" and "example";
 * - lowercase, then asciifolding (café → cafe; decomposed accents are not folded, unlike
 *   remove_diacritics 2), then porter_stem.
 * One shard: BM25 statistics are then index-wide, as in SQLite, so rankings agree; an index of
 * active records stays small. Replicas follow the cluster: none on one node, one otherwise.
 */
export const INDEX_SETTINGS: estypes.IndicesIndexSettings = {
  number_of_shards: 1,
  auto_expand_replicas: '0-1',
  analysis: {
    tokenizer: { gm_words: { type: 'pattern', pattern: '[^\\p{L}\\p{N}\\p{M}]+' } },
    analyzer: {
      gm_content: { type: 'custom', tokenizer: 'gm_words', filter: ['lowercase', 'asciifolding', 'porter_stem'] },
    },
  },
};

const MAPPINGS: estypes.MappingTypeMapping = {
  // Strict: a document that does not fit the mapping is rejected, never half-indexed.
  dynamic: 'strict',
  properties: {
    ...RECORD_FILTER_PROPERTIES,
    content: { type: 'text', analyzer: 'gm_content' },
    contentHash: { type: 'keyword' },
    confidence: { type: 'float' },
    createdAt: { type: 'date' },
    expiresAt: { type: 'date' },
    // Kept in _source for get(), never searched.
    provenance: { type: 'object', enabled: false },
  },
};

type StoredDocument = IndexDocument & { expiresAtMs: number };

/** Elasticsearch refuses a larger `size` (index.max_result_window); the port allows fewer hits. */
const MAX_HITS = 10_000;

function epochMs(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw new GovernedMemoryError('MEM_VALIDATION', `${field} is not a valid time`);
  return ms;
}


function toStored(doc: IndexDocument): StoredDocument {
  epochMs(doc.createdAt, 'createdAt');
  if (!Number.isSafeInteger(doc.version) || doc.version < 0) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'version must be a non-negative integer');
  }
  return { ...doc, expiresAtMs: epochMs(doc.expiresAt, 'expiresAt') };
}

function fromStored(source: StoredDocument): IndexDocument {
  const { expiresAtMs: _derived, ...doc } = source;
  return doc;
}

/** More purposes than this in one subject is refused rather than summarised in part. */
const SUBJECT_PURPOSES_MAX = 1000;

/** A subject's summary sources: its documents of the kinds, not expired at `now`. */
function subjectSourceFilter(query: Omit<RankedSubjectQuery, 'purpose' | 'after' | 'limit'>): estypes.QueryDslQueryContainer[] {
  return [
    { term: { tenantId: query.tenantId } },
    { term: { partition: query.partition } },
    { term: { subjectId: query.subjectId } },
    { terms: { kind: [...query.kinds] } },
    { range: { expiresAtMs: { gt: epochMs(query.now, 'now') } } },
  ];
}

export function createElasticsearchSearchIndex(options: ElasticsearchSearchIndexOptions): SearchIndex {
  const { alias, concrete } = esIndexNames(options.indexPrefix);
  const index = new ManagedIndex({ node: options.node, concrete, alias, settings: INDEX_SETTINGS, dynamicSettings: RECORDS_DYNAMIC_SETTINGS, mappings: MAPPINGS, what: 'search index' });
  const { client } = index;
  const run = <T>(operation: string, op: () => Promise<T>): Promise<T> => index.run(operation, op);

  const refresh = options.refresh ?? true;
  const refresher = new Refresher(async () => {
    await client.indices.refresh({ index: alias });
  });

  /** One bulk request through the alias, visible to search when it returns. */
  const bulk = (operations: (estypes.BulkOperationContainer | StoredDocument)[]) => bulkThroughAlias(client, operations, refresh === 'wait_for' ? 'wait_for' : refresher);

  return {
    async upsert(docs) {
      // Converted first, so an invalid document rejects the batch before anything is sent.
      const stored = docs.map(toStored);
      if (stored.length === 0) return;
      // An older version than the indexed one is refused per document (versionedIndexOps).
      await run('upsert', async () => checkUpserted(await bulk(versionedIndexOps(alias, stored))));
    },

    async remove(tenantId, recordIds) {
      if (recordIds.length === 0) return 0;
      return run('remove', async () => countRemoved(await bulk(recordDeleteOps(alias, tenantId, recordIds))));
    },

    async get(tenantId, recordId) {
      return run('get', async () => {
        try {
          const response = await client.get<StoredDocument>({ index: alias, id: recordDocId(tenantId, recordId) });
          const source = response._source;
          // The id already scopes by tenant; the check keeps that true whatever wrote the document.
          return source !== undefined && source.tenantId === tenantId ? fromStored(source) : null;
        } catch (e) {
          if (e instanceof errors.ResponseError && e.statusCode === 404 && !isIndexMissing(e)) return null;
          throw e;
        }
      });
    },

    async subjectPurposes(query) {
      if (query.kinds.length === 0) return [];
      return run('subjectPurposes', async () => {
        const response = await client.search<never, { purposes: estypes.AggregationsStringTermsAggregate }>({
          index: alias, size: 0, track_total_hits: false, allow_partial_search_results: false,
          query: { bool: { filter: subjectSourceFilter(query) } },
          aggs: { purposes: { terms: { field: 'purposes', size: SUBJECT_PURPOSES_MAX, order: { _key: 'asc' } } } },
        });
        requireComplete(response, 'subjectPurposes');
        const buckets = response.aggregations?.purposes.buckets;
        if (!Array.isArray(buckets)) throw new GovernedMemoryError('MEM_INTERNAL', 'search index returned no purposes aggregation');
        if (buckets.length >= SUBJECT_PURPOSES_MAX) throw new GovernedMemoryError('MEM_INTERNAL', `a subject allows ${SUBJECT_PURPOSES_MAX} purposes or more: more than a summary rebuild reads`);
        return buckets.map((b) => String(b.key)).sort();
      });
    },

    async subjectDocumentsRanked(query) {
      const limit = Math.floor(query.limit);
      if (!(limit > 0) || query.kinds.length === 0) return { documents: [] };
      const after = query.after === undefined ? undefined : decodeRankCursor(query.after);
      return run('subjectDocumentsRanked', async () => {
        const response = await client.search<StoredDocument>({
          index: alias, size: limit, track_total_hits: false, allow_partial_search_results: false,
          query: { bool: { filter: [...subjectSourceFilter(query), { term: { purposes: query.purpose } }] } },
          // The summary order (contracts' compareSummaryRank): confidence is a float here, which
          // is why the order takes it at 32 bits everywhere.
          sort: [{ confidence: { order: 'desc' } }, { createdAt: { order: 'desc' } }, { recordId: { order: 'asc' } }],
          ...(after === undefined ? {} : { search_after: after }),
        });
        requireComplete(response, 'subjectDocumentsRanked');
        const hits = response.hits.hits;
        const documents = hits.map((hit) => {
          if (hit._source === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'search index returned a hit without source');
          return fromStored(hit._source);
        });
        const last = hits.at(-1)?.sort;
        // [confidence, createdAt, recordId]: the float and the date come back as numbers, the id as a string.
        return hits.length === limit && last !== undefined ? { documents, next: encodeRankCursor(last as RankPosition) } : { documents };
      });
    },

    async search(query: SearchQuery): Promise<SearchHit[]> {
      // No authorised partition means nothing may be read: no request is even sent.
      if (query.partitions.length === 0) return [];
      const limit = Math.min(Math.floor(query.limit), MAX_HITS);
      if (!(limit > 0)) return [];
      const now = epochMs(query.now, 'now');
      // Every filter sits in the one query, so an excluded document is never scored, counted
      // against `size` or returned. An explicit empty kinds list matches nothing (fail closed).
      const filter: estypes.QueryDslQueryContainer[] = [
        { term: { tenantId: query.tenantId } },
        { terms: { partition: query.partitions } },
        { term: { purposes: query.purpose } },
        { range: { expiresAtMs: { gt: now } } },
      ];
      if (query.subjectId !== undefined) filter.push({ term: { subjectId: query.subjectId } });
      if (query.kinds !== undefined) filter.push({ terms: { kind: query.kinds } });
      return run('search', async () => {
        const response = await client.search<StoredDocument>({
          index: alias,
          size: limit,
          track_total_hits: false,
          track_scores: true,
          allow_partial_search_results: false,
          query: {
            bool: {
              filter,
              // Plain words, any of them (match never parses query syntax); no term, no hit.
              must: [{ match: { content: { query: query.text, operator: 'or', zero_terms_query: 'none' } } }],
            },
          },
          // recordId breaks score ties the way the SQLite adapter does, so pages are stable.
          sort: [{ _score: { order: 'desc' } }, { recordId: { order: 'asc' } }],
        });
        requireComplete(response, 'search');
        return response.hits.hits.map((hit) => {
          if (hit._source === undefined || typeof hit._score !== 'number') {
            throw new GovernedMemoryError('MEM_INTERNAL', 'search index returned a hit without source or score');
          }
          // BM25 of a matching term is positive; the floor only guards the port's "> 0".
          return { doc: fromStored(hit._source), lexicalScore: Math.max(hit._score, Number.MIN_VALUE) };
        });
      });
    },

    async count(tenantId) {
      return run('count', () => countDocuments(client, alias, tenantId));
    },

    async digest() {
      return run('digest', async () => {
        const fields = ['tenantId', 'recordId', 'version', 'contentHash', 'partition'];
        const sort: estypes.SortCombinations[] = [{ tenantId: { order: 'asc' } }, { recordId: { order: 'asc' } }];
        return indexDigest(await index.scan<Pick<IndexDocument, 'tenantId' | 'recordId' | 'version' | 'contentHash' | 'partition'>>({ match_all: {} }, sort, 'digest', fields));
      });
    },

    clear: () => index.clear(),

    eraseDeleted: (deletedBefore?: number) => index.expungeDeleted(deletedBefore),
    close: () => index.close(),
  };
}
