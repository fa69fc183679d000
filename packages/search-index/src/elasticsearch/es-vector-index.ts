/**
 * The distributed vector index: Elasticsearch's `dense_vector` (core server, HNSW, dot product
 * over unit vectors) with a kNN search whose `filter` holds every condition of the lexical
 * query. Elasticsearch applies a kNN filter *during* the approximate search, so the k nearest
 * are the k nearest among documents that pass it — never a post-filtered top-k, in which an
 * unauthorised record could take a place.
 */
import type { estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';
import type { VectorDocument, VectorHit, VectorIndex, VectorQuery } from '../vector-port.ts';
import { epochMsOf, validVector } from '../vector-values.ts';
import { ManagedIndex } from './es-managed-index.ts';
import { Refresher } from './es-refresher.ts';
import { RECORD_FILTER_PROPERTIES, bulkThroughAlias, checkUpserted, countDocuments, countRemoved, indexNamesOf, recordDeleteOps, recordDocId, requireComplete, versionedIndexOps } from './es-support.ts';

export interface ElasticsearchVectorIndexOptions {
  /** One node's URL, or the URLs of every node of one cluster. */
  node: string | readonly string[];
  /** Lower-case prefix of this index's names; one deployment (or test) per prefix. */
  indexPrefix: string;
  /** Dimensions of the model's vectors: fixed by the mapping. */
  dimensions: number;
  /**
   * Whether an upsert is visible to kNN on return. `true` (default): a refresh at once, shared
   * by concurrent writers (es-refresher.ts). `false`: at the next periodic refresh (within 1 s),
   * or when a reader asks (`visible`), for the vector-indexer, whose lag is allowed: a refresh
   * costs Elasticsearch some 14 ms of CPU however few vectors it makes visible (docs/sizing.md),
   * and one per batch of one or two writes was half its CPU per synchronous write. Its upserts
   * used to wait for the periodic refresh (`wait_for`), which held each batch, and everything
   * waiting for the group's commit (a deletion's `vector` target, §8.2), for half a second on
   * average. Removals always refresh at once: a deletion target's ack says what is gone, and the
   * replay probes search right after.
   */
  refresh?: boolean;
}

/** How many candidates HNSW considers per shard for k results (Elasticsearch's default is 1.5 k). */
const CANDIDATE_FACTOR = 10;
const MAX_K = 1_000;

/** Upserts left to the periodic refresh, or to `visible`. */
const VISIBLE_LATER = { afterWrite: () => Promise.resolve() };

export const esVectorIndexNames = (indexPrefix: string): { alias: string; concrete: string } => indexNamesOf(indexPrefix, 'vectors');

type StoredVector = Omit<VectorDocument, 'vector' | 'expiresAt'> & { vector: number[]; expiresAtMs: number };


export function createElasticsearchVectorIndex(options: ElasticsearchVectorIndexOptions): VectorIndex {
  const { alias, concrete } = esVectorIndexNames(options.indexPrefix);
  const mappings: estypes.MappingTypeMapping = {
    dynamic: 'strict',
    properties: {
      ...RECORD_FILTER_PROPERTIES,
      modelId: { type: 'keyword' },
      // dot_product needs unit vectors, which the embedding port guarantees; float, not
      // quantized, so both runtimes rank with the same similarities.
      vector: { type: 'dense_vector', dims: options.dimensions, index: true, similarity: 'dot_product', index_options: { type: 'hnsw' } },
    },
  };
  const index = new ManagedIndex({
    node: options.node, concrete, alias, settings: { number_of_shards: 1, auto_expand_replicas: '0-1' }, mappings, what: 'vector index',
  });
  const { client } = index;
  const run = <T>(operation: string, op: () => Promise<T>): Promise<T> => index.run(operation, op);
  const refresher = new Refresher(async () => {
    await client.indices.refresh({ index: alias });
  });

  const bulk = (operations: (estypes.BulkOperationContainer | StoredVector)[]) => bulkThroughAlias(client, operations, refresher);
  const upsertVisible = options.refresh === false ? VISIBLE_LATER : refresher;

  return {
    async upsert(docs) {
      const stored: StoredVector[] = docs.map(({ vector, expiresAt, ...d }) => {
        if (vector.length !== options.dimensions) throw new GovernedMemoryError('MEM_VALIDATION', `vector must have ${options.dimensions} dimensions`);
        return { ...d, vector: Array.from(validVector(vector, 'vector')), expiresAtMs: epochMsOf(expiresAt, 'expiresAt') };
      });
      if (stored.length === 0) return;
      await run('upsert', async () => checkUpserted(await bulkThroughAlias(client, versionedIndexOps(alias, stored), upsertVisible)));
    },

    async remove(tenantId, recordIds) {
      if (recordIds.length === 0) return 0;
      return run('remove', async () => countRemoved(await bulk(recordDeleteOps(alias, tenantId, recordIds))));
    },

    async knn(query: VectorQuery): Promise<VectorHit[]> {
      // No authorised partition: no request is even sent.
      if (query.partitions.length === 0 || !(query.k >= 1)) return [];
      const k = Math.min(Math.floor(query.k), MAX_K);
      const vector = validVector(query.vector, 'vector');
      if (vector.length !== options.dimensions) return [];
      const filter: estypes.QueryDslQueryContainer[] = [
        { term: { tenantId: query.tenantId } },
        { terms: { partition: query.partitions } },
        { term: { purposes: query.purpose } },
        { term: { modelId: query.modelId } },
        { range: { expiresAtMs: { gt: epochMsOf(query.now, 'now') } } },
        ...(query.subjectId === undefined ? [] : [{ term: { subjectId: query.subjectId } }]),
        ...(query.kinds === undefined ? [] : [{ terms: { kind: query.kinds } }]),
      ];
      return run('knn', async () => {
        const response = await client.search<Pick<StoredVector, 'recordId' | 'partition'>>({
          index: alias,
          knn: { field: 'vector', query_vector: Array.from(vector), k, num_candidates: Math.min(10_000, k * CANDIDATE_FACTOR), filter },
          size: k,
          _source: ['recordId', 'partition'],
        });
        requireComplete(response, 'knn');
        const hits = response.hits.hits.flatMap((hit) => {
          const source = hit._source;
          if (source === undefined) return [];
          // dot_product scores are (1 + dot) / 2: back to the cosine of unit vectors.
          return [{ recordId: source.recordId, partition: source.partition, similarity: 2 * (hit._score ?? 0) - 1 }];
        });
        return hits.sort((a, b) => b.similarity - a.similarity || (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : 0));
      });
    },

    async visible() {
      await run('visible', () => refresher.afterWrite());
    },

    async has(tenantId, recordId) {
      return run('has', async () => client.exists({ index: alias, id: recordDocId(tenantId, recordId) }));
    },

    async vectorsOf(tenantId, recordIds, modelId) {
      if (recordIds.length === 0) return new Map();
      return run('vectorsOf', async () => {
        // Real-time reads by id (the vector-indexer's own upserts wait for no refresh); the vector
        // is named in `_source`, which Elasticsearch leaves out of a document's source otherwise.
        const response = await client.mget<Pick<StoredVector, 'recordId' | 'modelId' | 'vector'>>({
          index: alias, ids: recordIds.map((id) => recordDocId(tenantId, id)), _source: ['recordId', 'modelId', 'vector'],
        });
        const found = new Map<string, Float32Array>();
        for (const doc of response.docs) {
          const source = 'found' in doc && doc.found ? doc._source : undefined;
          if (source !== undefined && source.modelId === modelId && Array.isArray(source.vector)) found.set(source.recordId, Float32Array.from(source.vector));
        }
        return found;
      });
    },

    async count(tenantId) {
      return run('count', () => countDocuments(client, alias, tenantId));
    },

    async modelIds() {
      return run('modelIds', async () => {
        const response = await client.search({ index: alias, size: 0, aggs: { models: { terms: { field: 'modelId', size: 100 } } } });
        const buckets = (response.aggregations?.models as estypes.AggregationsStringTermsAggregate | undefined)?.buckets;
        return (Array.isArray(buckets) ? buckets : []).map((b) => String(b.key)).sort();
      });
    },

    clear: () => index.clear(),
    eraseDeleted: (deletedBefore?: number) => index.expungeDeleted(deletedBefore),
    close: () => index.close(),
  };
}
