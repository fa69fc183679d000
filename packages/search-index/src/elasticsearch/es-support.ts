import { createHash } from 'node:crypto';
import { errors, type Client } from '@elastic/elasticsearch';
import type { estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';
import { keyOf } from '@gm/ids';

/* Shared by the Elasticsearch adapters (search index, summaries, vectors): names, ids, error mapping, bulk writes. */

/** `%` and `/` escaped, so `tenant/record` is unambiguous for any input and unchanged for valid ids. */
export const idPart = (s: string) => s.replaceAll('%', '%25').replaceAll('/', '%2F');

/** Elasticsearch refuses a document whose `_id` is longer than this many bytes (UTF-8). */
export const MAX_DOC_ID_BYTES = 512;

/**
 * The document id of two or more ids, always within Elasticsearch's `_id` limit: the parts
 * escaped and joined by `/` — the form every document was indexed under so far, kept so that a
 * lookup or delete of an existing document still finds it — unless that would pass the limit;
 * then a fixed-length digest of the parts' one injective encoding (`keyOf`, @gm/ids), which
 * holds no `/` and so is never a joined id. A summary's id (tenant, partition — itself up to
 * two ids long —, subject, purpose) passes the limit with maximal legal ids (design §4). The
 * parts are ids, never content: a plain hash of content is content (§8.5). The id is a function
 * of the parts alone, so every write, lookup and delete of the same parts meets one document.
 */
export function docIdOf(...parts: [string, string, ...string[]]): string {
  const joined = parts.map(idPart).join('/');
  if (Buffer.byteLength(joined, 'utf8') <= MAX_DOC_ID_BYTES) return joined;
  return `sha256-${createHash('sha256').update(keyOf(...parts), 'utf8').digest('hex')}`;
}

/**
 * The document id of a record's copy in an index of records (the search index, the vector
 * index). Legal ids (tenant ≤ 64, record ≤ 128 characters of ASCII) always give the joined form.
 */
export const recordDocId = (tenantId: string, recordId: string) => docIdOf(tenantId, recordId);

/**
 * An adapter's alias (every read and write goes through it) and concrete index (its mapping
 * generation) for a deployment's prefix: `<prefix>-<name>` and `<prefix>-<name>-v1`.
 */
export function indexNamesOf(indexPrefix: string, name: string): { alias: string; concrete: string } {
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(indexPrefix)) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'indexPrefix must be lower-case letters, digits, ".", "_" or "-"');
  }
  return { alias: `${indexPrefix}-${name}`, concrete: `${indexPrefix}-${name}-v1` };
}
/** Elasticsearch's own error type (`{error: {type}}`), the stable way to tell failures apart. */
export function errorType(e: unknown): string | undefined {
  const body: unknown = e instanceof errors.ResponseError ? e.body : undefined;
  const error: unknown = typeof body === 'object' && body !== null && 'error' in body ? body.error : undefined;
  return typeof error === 'object' && error !== null && 'type' in error && typeof error.type === 'string' ? error.type : undefined;
}

/** A bulk item found no index behind the alias: the index was dropped after we created it. */
export class IndexMissingError extends Error {}

export const isIndexMissing = (e: unknown) => e instanceof IndexMissingError || errorType(e) === 'index_not_found_exception';

/** Engine and transport failures, as coded errors: unreachable or overloaded is retriable. */
export function toGovernedError(e: unknown, operation: string): GovernedMemoryError {
  if (e instanceof GovernedMemoryError) return e;
  const transient =
    e instanceof errors.ConnectionError ||
    e instanceof errors.TimeoutError ||
    e instanceof errors.NoLivingConnectionsError ||
    (e instanceof errors.ResponseError && (e.statusCode === 429 || (e.statusCode ?? 500) >= 500));
  return transient
    ? new GovernedMemoryError('MEM_UNAVAILABLE', `search index unavailable (${operation})`, { retriable: true, cause: e })
    : new GovernedMemoryError('MEM_INTERNAL', `search index request failed (${operation})`, { cause: e });
}

/** Shard failures or a timeout mean some documents were not looked at: never answer from part. */
export function requireComplete(response: { timed_out?: boolean; _shards: estypes.ShardStatistics }, operation: string): void {
  if (response.timed_out === true || response._shards.failed > 0) {
    throw new GovernedMemoryError('MEM_UNAVAILABLE', `search index answered from part of its shards (${operation})`, { retriable: true });
  }
}

export function bulkItemError(item: estypes.BulkResponseItem, operation: string): GovernedMemoryError {
  const cause = new Error(`${item.error?.type ?? 'unknown'}: ${item.error?.reason ?? ''}`);
  return item.status === 429 || item.status >= 500
    ? new GovernedMemoryError('MEM_UNAVAILABLE', `search index rejected a write (${operation})`, { retriable: true, cause })
    : new GovernedMemoryError('MEM_INTERNAL', `search index rejected a document (${operation})`, { cause });
}


/** A bulk request's items, index or delete, in request order (what the adapters' `bulk` returns). */
export type BulkItems = Array<estypes.BulkResponseItem | undefined>;

/**
 * The bulk operations that upsert record documents by their id (recordDocId), each carrying its
 * record version as the document version (`external_gte`): Elasticsearch refuses an older one
 * atomically per document, also within one batch. Not atomic across the batch: after a failure
 * a retry converges.
 */
export function versionedIndexOps<D extends { tenantId: string; recordId: string; version: number }>(alias: string, docs: readonly D[]): Array<estypes.BulkOperationContainer | D> {
  return docs.flatMap((d) => [{ index: { _index: alias, _id: recordDocId(d.tenantId, d.recordId), version: d.version, version_type: 'external_gte' as const } }, d]);
}

/** Fails on the first item error, except an older version than the indexed one: ignored by design. */
/** Bulk deletes of the records' documents, one per record id. */
export const recordDeleteOps = (alias: string, tenantId: string, recordIds: readonly string[]) =>
  recordIds.map((recordId) => ({ delete: { _index: alias, _id: recordDocId(tenantId, recordId) } }));

export function checkUpserted(items: BulkItems): void {
  for (const item of items) {
    if (item?.error === undefined) continue;
    if (item.status === 409 && item.error.type === 'version_conflict_engine_exception') continue;
    throw bulkItemError(item, 'upsert');
  }
}

/** How many of a delete bulk's items removed a document; not_found (already removed) counts none. */
export function countRemoved(items: BulkItems): number {
  let removed = 0;
  for (const item of items) {
    if (item?.result === 'deleted') removed += 1;
    else if (item?.error !== undefined) throw bulkItemError(item, 'remove');
  }
  return removed;
}

/**
 * One bulk request through the alias (`require_alias`: a write after someone deleted the index
 * never auto-creates one with dynamic mappings), visible to search when it returns: either the
 * refresh is waited for, or a refresh shared with concurrent writers (es-refresher.ts) follows.
 */
export async function bulkThroughAlias(
  client: Client, operations: estypes.BulkRequest['operations'], visible: 'wait_for' | { afterWrite(): Promise<void> },
): Promise<BulkItems> {
  const response = await client.bulk({ operations, refresh: visible === 'wait_for' ? 'wait_for' : false, require_alias: true });
  const items = response.items.map((item) => item.index ?? item.delete);
  if (items.some((item) => item?.error?.type === 'index_not_found_exception')) throw new IndexMissingError();
  if (visible !== 'wait_for') await visible.afterWrite();
  return items;
}

/**
 * The fields every index of records filters on (the search index, the vector index), typed
 * alike so that one query's filters mean the same in each. `expiresAtMs` is compared as the
 * number Date.parse gives, as the SQLite adapters do, so both runtimes agree on every offset
 * form an ISO time may take.
 */
export const RECORD_FILTER_PROPERTIES: Record<string, estypes.MappingProperty> = {
  tenantId: { type: 'keyword' },
  recordId: { type: 'keyword' },
  partition: { type: 'keyword' },
  subjectId: { type: 'keyword' },
  kind: { type: 'keyword' },
  purposes: { type: 'keyword' },
  expiresAtMs: { type: 'long' },
  version: { type: 'long' },
};

/** Documents in the alias, of one tenant or all. Call inside the adapter's `run`. */
export async function countDocuments(client: Client, alias: string, tenantId: string | undefined): Promise<number> {
  const response = await client.count({ index: alias, query: tenantId === undefined ? { match_all: {} } : { term: { tenantId } } });
  requireComplete(response, 'count');
  return response.count;
}
