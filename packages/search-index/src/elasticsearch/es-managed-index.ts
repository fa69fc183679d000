import { Client, type estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';
import { errorType, isIndexMissing, requireComplete, toGovernedError } from './es-support.ts';

const SCAN_PAGE = 1000;
/**
 * A lease renewed this long after a deletion's time has passed it: the renewal sets it just past
 * the global checkpoint, which already covered the acknowledged deletion. The margin absorbs
 * the skew between the clock that dated the deletion and Elasticsearch's.
 */
const CLOCK_MARGIN_MS = 2_000;
/**
 * Set on every index: a force merge that expunges deletes rewrites every segment holding a
 * deleted document, not only those over 10 % deleted (the default would keep one record's
 * bytes in a large segment until a natural merge).
 */
const ERASURE_SETTINGS: estypes.IndicesIndexSettings = { 'merge.policy.expunge_deletes_allowed': 0 };

/** Each copy of each shard, as `_stats?level=shards` reads it: its highest sequence number and the leases it keeps. */
type ShardCopyStats = {
  seq_no?: { max_seq_no: number };
  retention_leases?: { leases: Array<{ retaining_seq_no: number; timestamp: number }> };
};

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
   * After deletions (design §8.4): makes the documents deleted before `deletedBefore` (epoch ms;
   * default: now) leave the index's files. A deleted document stays in its segment as a soft
   * delete while a retention lease (the one each shard copy keeps for peer recovery) retains its
   * sequence number, and Elasticsearch moves those leases on only on its own schedule, about
   * every 30 s, with no API to ask sooner. A lease has passed the deletions when it was renewed
   * after them, or when it retains nothing the shard holds. Once every lease has: a flush (the
   * translog's copies go) and a force merge that expunges deleted documents, and `erased`.
   * Before that, `pending_compaction` at once; the caller decides how long to ask again.
   */
  async expungeDeleted(deletedBefore = Date.now()): Promise<'erased' | 'pending_compaction'> {
    return this.run('expunge deleted', async () => {
      const passed = Object.values(await this.shardCopies()).every((copies) => {
        const maxSeqNo = Math.max(...copies.map((c) => c.seq_no?.max_seq_no ?? -1));
        return copies.every((copy) => (copy.retention_leases?.leases ?? [])
          .every((lease) => lease.timestamp > deletedBefore + CLOCK_MARGIN_MS || lease.retaining_seq_no > maxSeqNo));
      });
      if (!passed) return 'pending_compaction';
      await this.client.indices.flush({ index: this.options.alias });
      await this.client.indices.forcemerge({ index: this.options.alias, only_expunge_deletes: true });
      return 'erased';
    });
  }

  private async shardCopies(): Promise<Record<string, ShardCopyStats[]>> {
    const stats = await this.client.indices.stats({ index: this.options.alias, level: 'shards', metric: 'docs', filter_path: ['indices.*.shards.*.seq_no', 'indices.*.shards.*.retention_leases'] });
    const indices = Object.values((stats as { indices?: Record<string, { shards?: Record<string, ShardCopyStats[]> }> }).indices ?? {});
    return Object.assign({}, ...indices.map((i) => i.shards ?? {})) as Record<string, ShardCopyStats[]>;
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
      await this.client.indices.create({ index: concrete, settings: { ...settings, ...ERASURE_SETTINGS, ...dynamicSettings }, mappings, aliases: { [alias]: {} } });
    } catch (e) {
      // Another instance (or a reopen) created it first: same mapping; the dynamic settings may be older.
      if (errorType(e) !== 'resource_already_exists_exception') throw e;
      await this.client.indices.putSettings({ index: concrete, settings: { ...ERASURE_SETTINGS, ...dynamicSettings } });
    }
  }
}
