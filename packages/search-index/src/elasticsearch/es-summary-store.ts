import type { estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';
import { keyOf } from '@gm/ids';
import type { ScopeSummaries, Summary, SummaryHit, SummaryKey, SummaryQuery, SummaryStore } from '../summary-port.ts';
import { checkReplaceMany, compareKeys, epochMs, summaryDigest } from '../embedded/summary-digest.ts';
import { ManagedIndex } from './es-managed-index.ts';
import { Refresher } from './es-refresher.ts';
import { IndexMissingError, bulkItemError, docIdOf, indexNamesOf, requireComplete } from './es-support.ts';
import { INDEX_SETTINGS } from './es-search-index.ts';

export interface ElasticsearchSummaryStoreOptions {
  /** One node's URL, or the URLs of every node of one cluster. */
  node: string | readonly string[];
  /** The same prefix as the search index: the summaries live in `<prefix>-summaries`. */
  indexPrefix: string;
  /**
   * When a write is visible on return. `true` (default): a refresh at once, shared by
   * concurrent writers (es-refresher.ts), as the summary deletion target needs (the replay
   * probes search right after its ack). `'wait_for'`: the next periodic refresh (within 250 ms),
   * for the summary-builder, whose summaries follow writes eventually (design §6.8): a refresh
   * costs Elasticsearch some 14 ms of CPU however little it makes visible (docs/sizing.md).
   */
  refresh?: true | 'wait_for';
}

/** Alias for writes (require_alias, as the search index) and the mapping generation behind it. */
export const esSummaryIndexNames = (indexPrefix: string): { alias: string; concrete: string } => indexNamesOf(indexPrefix, 'summaries');

const MAPPINGS: estypes.MappingTypeMapping = {
  dynamic: 'strict',
  properties: {
    tenantId: { type: 'keyword' },
    partition: { type: 'keyword' },
    subjectId: { type: 'keyword' },
    purpose: { type: 'keyword' },
    // Same analyzer as record content, so a summary matches the words its sources match.
    text: { type: 'text', analyzer: 'gm_content' },
    // Kept in _source; the ids are a separate keyword field so `holding` is a terms filter.
    derivedFrom: { type: 'object', enabled: false },
    derivedFromIds: { type: 'keyword' },
    expiresAt: { type: 'date' },
    expiresAtMs: { type: 'long' },
    updatedAt: { type: 'date' },
    updatedAtMs: { type: 'long' },
  },
};

type Stored = Summary & { derivedFromIds: string[]; expiresAtMs: number; updatedAtMs: number };

const MAX_HITS = 10_000;

/** Bounded (es-support docIdOf): with maximal legal ids the plain join of these four passes Elasticsearch's `_id` limit. */
const docId = (k: Pick<SummaryKey, 'tenantId' | 'partition' | 'subjectId' | 'purpose'>) =>
  docIdOf(k.tenantId, k.partition, k.subjectId, k.purpose);

const toStored = (s: Summary): Stored => ({
  ...s,
  derivedFromIds: [...new Set(s.derivedFrom.map((d) => d.recordId))],
  expiresAtMs: epochMs(s.expiresAt, 'expiresAt'),
  updatedAtMs: epochMs(s.updatedAt, 'updatedAt'),
});

function fromStored(source: Stored): Summary {
  const { derivedFromIds: _ids, expiresAtMs: _e, updatedAtMs: _u, ...summary } = source;
  return summary;
}

/**
 * The summary-builder's writes wait for the next periodic refresh (refresh 'wait_for'), and each
 * partition's next batch waits for that write: at the default 1 s the group's batches queued
 * behind refreshes and its lag grew under ingest. A refresh with nothing new costs nothing.
 */
const SUMMARY_DYNAMIC_SETTINGS: estypes.IndicesIndexSettings = { refresh_interval: '250ms' };

export function createElasticsearchSummaryStore(options: ElasticsearchSummaryStoreOptions): SummaryStore {
  const { alias, concrete } = esSummaryIndexNames(options.indexPrefix);
  const index = new ManagedIndex({ node: options.node, concrete, alias, settings: INDEX_SETTINGS, dynamicSettings: SUMMARY_DYNAMIC_SETTINGS, mappings: MAPPINGS, what: 'summaries' });
  const { client } = index;
  const run = <T>(operation: string, op: () => Promise<T>): Promise<T> => index.run(operation, op);

  const refresher = new Refresher(async () => {
    await client.indices.refresh({ index: alias });
  });

  /** Every document matching `query`, paged by id (search_after: no scroll context to hold). */
  const scan = (query: estypes.QueryDslQueryContainer, operation: string): Promise<Stored[]> =>
    index.scan<Stored>(query, [{ tenantId: 'asc' }, { partition: 'asc' }, { subjectId: 'asc' }, { purpose: 'asc' }], operation);

  const scopeQuery = (tenantId: string, partition: string, subjectId: string): estypes.QueryDslQueryContainer => ({
    bool: { filter: [{ term: { tenantId } }, { term: { partition } }, { term: { subjectId } }] },
  });

  async function bulk(operations: (estypes.BulkOperationContainer | Stored)[], operation: string) {
    if (operations.length === 0) return [];
    const response = await client.bulk({ operations, refresh: options.refresh === 'wait_for' ? 'wait_for' : false, require_alias: true });
    const items = response.items.map((item) => item.index ?? item.delete);
    if (items.some((item) => item?.error?.type === 'index_not_found_exception')) throw new IndexMissingError();
    for (const item of items) {
      // A delete of an already-removed document (404) is idempotent, not a failure.
      if (item?.error !== undefined) throw bulkItemError(item, operation);
    }
    if (options.refresh !== 'wait_for') await refresher.afterWrite();
    return items;
  }

  async function replaceMany(tenantId: string, scopes: readonly ScopeSummaries[]): Promise<void> {
    checkReplaceMany(tenantId, scopes);
    if (scopes.length === 0) return;
    const stored = scopes.flatMap((scope) => scope.summaries.map(toStored));
    await run('replace', async () => {
      // Index the new sets, then delete the purposes they no longer have, in one bulk. Not
      // atomic across the bulk: a failure is retried by the caller and converges.
      const keep = new Set(stored.map(docId));
      // The scopes' subjects in one terms query (a bool of one clause per scope would meet the
      // clause limit), then only the documents of the scopes themselves.
      const inScope = new Set(scopes.map((s) => keyOf(tenantId, s.partition, s.subjectId)));
      const existing = await scan({
        bool: { filter: [{ term: { tenantId } }, { terms: { subjectId: [...new Set(scopes.map((s) => s.subjectId))] } }] },
      }, 'replace');
      const stale = existing.filter((doc) => inScope.has(keyOf(doc.tenantId, doc.partition, doc.subjectId))).map(docId).filter((id) => !keep.has(id));
      await bulk([
        ...stored.flatMap((s) => [{ index: { _index: alias, _id: docId(s) } }, s]),
        ...stale.map((id) => ({ delete: { _index: alias, _id: id } })),
      ], 'replace');
    });
  }

  return {
    replace: (tenantId, partition, subjectId, summaries) => replaceMany(tenantId, [{ partition, subjectId, summaries }]),
    replaceMany,

    async remove(tenantId, partition, subjectId) {
      return run('remove', async () => {
        const ids = (await scan(scopeQuery(tenantId, partition, subjectId), 'remove')).map(docId);
        const items = await bulk(ids.map((id) => ({ delete: { _index: alias, _id: id } })), 'remove');
        return items.filter((item) => item?.result === 'deleted').length;
      });
    },

    async get(tenantId, partition, subjectId) {
      return run('get', async () => (await scan(scopeQuery(tenantId, partition, subjectId), 'get')).map(fromStored));
    },

    async search(query: SummaryQuery): Promise<SummaryHit[]> {
      if (query.partitions.length === 0) return [];
      const limit = Math.min(Math.floor(query.limit), MAX_HITS);
      if (!(limit > 0)) return [];
      const filter: estypes.QueryDslQueryContainer[] = [
        { term: { tenantId: query.tenantId } },
        { terms: { partition: query.partitions } },
        { term: { purpose: query.purpose } },
        { range: { expiresAtMs: { gt: epochMs(query.now, 'now') } } },
      ];
      if (query.subjectId !== undefined) filter.push({ term: { subjectId: query.subjectId } });
      const text = query.text;
      return run('search', async () => {
        const response = await client.search<Stored>({
          index: alias,
          size: limit,
          track_total_hits: false,
          track_scores: text !== undefined,
          allow_partial_search_results: false,
          query: text === undefined
            ? { bool: { filter } }
            : { bool: { filter, must: [{ match: { text: { query: text, operator: 'or', zero_terms_query: 'none' } } }] } },
          sort: text === undefined
            ? [{ updatedAtMs: 'desc' }, { partition: 'asc' }, { subjectId: 'asc' }]
            : [{ _score: { order: 'desc' } }, { partition: 'asc' }, { subjectId: 'asc' }],
        });
        requireComplete(response, 'summaries search');
        return response.hits.hits.map((hit) => {
          if (hit._source === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'summary store returned a hit without source');
          const score = text === undefined ? 0 : Math.max(typeof hit._score === 'number' ? hit._score : 0, Number.MIN_VALUE);
          return { summary: fromStored(hit._source), lexicalScore: score };
        });
      });
    },

    async holding(tenantId, recordIds) {
      if (recordIds.length === 0) return [];
      return run('holding', async () => {
        const found = await scan({ bool: { filter: [{ term: { tenantId } }, { terms: { derivedFromIds: recordIds } }] } }, 'holding');
        return found
          .map((s): SummaryKey => ({ tenantId: s.tenantId, partition: s.partition, subjectId: s.subjectId, purpose: s.purpose }))
          .sort(compareKeys);
      });
    },

    async count(tenantId) {
      return run('count', async () => {
        const response = await client.count({ index: alias, query: tenantId === undefined ? { match_all: {} } : { term: { tenantId } } });
        requireComplete(response, 'summaries count');
        return response.count;
      });
    },

    async digest() {
      return run('digest', async () => summaryDigest((await scan({ match_all: {} }, 'digest')).map(fromStored)));
    },

    clear: () => index.clear(),

    eraseDeleted: (deletedBefore?: number) => index.expungeDeleted(deletedBefore),
    close: () => index.close(),
  };
}
