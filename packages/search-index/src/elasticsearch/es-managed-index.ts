import { Client, type estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';
import { errorType, isIndexMissing, requireComplete, toGovernedError } from './es-support.ts';

const SCAN_PAGE = 1000;

export interface ManagedIndexOptions {
  /** One node's URL, or the URLs of every node of one cluster. */
  node: string | readonly string[];
  /** The concrete index created on first use, and the alias every operation goes through. */
  concrete: string;
  alias: string;
  settings: estypes.IndicesIndexSettings;
  /**
   * Settings that may change on a live index (e.g. refresh_interval): set at creation, and set
   * again on an index that exists already, so a deployment created before a change gets it too.
   */
  dynamicSettings?: estypes.IndicesIndexSettings;
  mappings: estypes.MappingTypeMapping;
  /** Names the store in errors ("search index", "summaries"). */
  what: string;
}

/**
 * One Elasticsearch index owned by an adapter (the search index, the summary store): the
 * client, creation on first use, an operation wrapper that recreates a vanished index once,
 * `clear` by dropping it, and `close`. Shared so both stores fail and recover the same way.
 */
export class ManagedIndex {
  readonly client: Client;
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: ManagedIndexOptions) {
    // No query text in telemetry (§10): the client only traces when OpenTelemetry is set up,
    // and then it must not record search bodies.
    process.env.OTEL_ELASTICSEARCH_CAPTURE_SEARCH_QUERY ??= 'false';
    // One attempt per node: a request that cannot reach one node (dead, restarting) is tried
    // once on each other node, after the client's backoff of 1-2 s, and the pool then sends
    // requests to the live nodes. Beyond that no transport retries: every failure surfaces as
    // a coded, retriable error, and the caller, which knows its deadline, decides.
    const nodes = typeof options.node === 'string' ? [options.node] : [...options.node];
    this.client = new Client({ nodes, maxRetries: nodes.length - 1 });
  }

  /**
   * Runs one operation against an existing index. If the index vanished meanwhile (another
   * instance's clear(), an operator), it is recreated empty and the operation runs once more.
   */
  async run<T>(operation: string, op: () => Promise<T>): Promise<T> {
    if (this.closed) throw new GovernedMemoryError('MEM_UNAVAILABLE', `${this.options.what} is closed (${operation})`);
    try {
      await this.ensure();
      try {
        return await op();
      } catch (e) {
        if (!isIndexMissing(e)) throw e;
        this.ready = undefined;
        await this.ensure();
        return await op();
      }
    } catch (e) {
      throw toGovernedError(e, `${this.options.what} ${operation}`);
    }
  }

  /**
   * Every hit of `query` in `sort` order, a page at a time with search_after over a unique
   * sort (no scroll context to hold). Call inside `run`. Refuses partial results: a scan that
   * silently missed a shard would make a digest or a rebuild lie.
   */
  async scan<T>(
    query: estypes.QueryDslQueryContainer, sort: estypes.SortCombinations[], operation: string, source?: string[],
  ): Promise<T[]> {
    const out: T[] = [];
    let after: estypes.SortResults | undefined;
    for (;;) {
      const response = await this.client.search<T>({
        index: this.options.alias, size: SCAN_PAGE, track_total_hits: false, allow_partial_search_results: false, query, sort,
        ...(source === undefined ? {} : { _source: source }),
        ...(after === undefined ? {} : { search_after: after }),
      });
      requireComplete(response, operation);
      const hits = response.hits.hits;
      for (const hit of hits) {
        if (hit._source === undefined) throw new GovernedMemoryError('MEM_INTERNAL', `${this.options.what} returned a hit without source`);
        out.push(hit._source);
      }
      after = hits.at(-1)?.sort;
      if (hits.length < SCAN_PAGE || after === undefined) return out;
    }
  }

  /**
   * Dropping the index is the only complete "delete everything" without delete_by_query; it
   * also drops version tombstones, so a replay may write any version again.
   */
  clear(): Promise<void> {
    return this.run('clear', async () => {
      await this.client.indices.delete({ index: this.options.concrete, ignore_unavailable: true });
      this.ready = undefined;
      await this.ensure();
    });
  }

  /**
   * After deletions (design §8.4): flushes (the translog's copies of the documents go) and force-
   * merges away deleted documents. `erased` only when no deleted document is left in any segment;
   * otherwise — a merge policy or a retention lease that keeps them — `pending_compaction`: they
   * stay in the index's files until Elasticsearch merges those segments.
   */
  async expungeDeleted(): Promise<'erased' | 'pending_compaction'> {
    return this.run('expunge deleted', async () => {
      await this.client.indices.flush({ index: this.options.alias });
      await this.client.indices.forcemerge({ index: this.options.alias, only_expunge_deletes: true });
      const stats = await this.client.indices.stats({ index: this.options.alias, metric: 'docs' });
      return (stats._all.total?.docs?.deleted ?? 0) === 0 ? 'erased' : 'pending_compaction';
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }

  private ensure(): Promise<void> {
    this.ready ??= this.create().catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  private async create(): Promise<void> {
    const { concrete, alias, settings, dynamicSettings, mappings } = this.options;
    try {
      await this.client.indices.create({ index: concrete, settings: { ...settings, ...dynamicSettings }, mappings, aliases: { [alias]: {} } });
    } catch (e) {
      // Another instance (or a reopen) created it first: same mapping; the dynamic settings may be older.
      if (errorType(e) !== 'resource_already_exists_exception') throw e;
      if (dynamicSettings !== undefined) await this.client.indices.putSettings({ index: concrete, settings: dynamicSettings });
    }
  }
}
