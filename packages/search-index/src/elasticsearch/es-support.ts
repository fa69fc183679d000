import { errors } from '@elastic/elasticsearch';
import type { estypes } from '@elastic/elasticsearch';
import { GovernedMemoryError } from '@gm/contracts';

/* Shared by the Elasticsearch adapters (search index, summaries): error mapping and ids. */

/** `%` and `/` escaped, so `tenant/record` is unambiguous for any input and unchanged for valid ids. */
export const idPart = (s: string) => s.replaceAll('%', '%25').replaceAll('/', '%2F');
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
 * The bulk operations that upsert documents by id, each carrying its record version as the
 * document version (`external_gte`): Elasticsearch refuses an older one atomically per document,
 * also within one batch. Not atomic across the batch: after a failure a retry converges.
 */
export function versionedIndexOps<D extends { version: number }>(alias: string, docs: readonly D[], idOf: (d: D) => string): Array<estypes.BulkOperationContainer | D> {
  return docs.flatMap((d) => [{ index: { _index: alias, _id: idOf(d), version: d.version, version_type: 'external_gte' as const } }, d]);
}

/** Fails on the first item error, except an older version than the indexed one: ignored by design. */
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
