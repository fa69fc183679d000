/**
 * The query audit (MEMORY_QUERY_AUDIT=on): one log line per query the read path sends to the
 * search index or the vector index, naming the request, the capability's principal and purpose
 * and the partitions the query was confined to. It is written at the adapters' boundary, after
 * the policy decision point, so it shows what the indexes were asked, not what the policy code
 * meant to ask: partition-first retrieval (§6.3) can be checked from outside, on a distributed
 * deployment too, where no test can hook the broker's process. Ids and decisions only, never
 * the query's text or vector.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from '@gm/observability';
import type { SearchIndex, SearchQuery, VectorIndex, VectorQuery } from '@gm/search-index';

/** What the audit knows of the request a query runs for: set as the request arrives and once its capability is verified. */
export interface AuditedRequest {
  requestId: string;
  principalId?: string;
  purpose?: string;
}

const requests = new AsyncLocalStorage<AuditedRequest>();

/** Runs the rest of a request's handling inside its audit scope (a fastify onRequest hook). */
export function inRequestScope(requestId: string, next: () => void): void {
  requests.run({ requestId }, next);
}

/** Names the verified capability's principal and purpose for the queries of the current request. */
export function auditCapability(principalId: string, purpose: string): void {
  const current = requests.getStore();
  if (current === undefined) return;
  current.principalId = principalId;
  current.purpose = purpose;
}

type Leg = 'keyword' | 'vector';

function record(log: Logger, leg: Leg, query: SearchQuery | VectorQuery): void {
  const request = requests.getStore();
  log.info({
    audit: 'index-query', leg, requestId: request?.requestId, principalId: request?.principalId, purpose: request?.purpose,
    tenantId: query.tenantId, queryPurpose: query.purpose, partitions: query.partitions, now: query.now,
  }, 'index query');
}

/** The search index, its `search` audited; every other method the adapter's own. */
export function auditedIndex(index: SearchIndex, log: Logger): SearchIndex {
  return { ...bound(index), search: (query) => (record(log, 'keyword', query), index.search(query)) };
}

/** The vector index, its `knn` audited; every other method the adapter's own. */
export function auditedVectors(vectors: VectorIndex, log: Logger): VectorIndex {
  return { ...bound(vectors), knn: (query) => (record(log, 'vector', query), vectors.knn(query)) };
}

/** An adapter's methods bound to it (adapters may be class instances), as a plain object. */
function bound<T extends object>(adapter: T): T {
  const methods: Record<string, unknown> = {};
  for (let o: object | null = adapter; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Object.getOwnPropertyNames(o)) {
      const value: unknown = (adapter as Record<string, unknown>)[key];
      if (key !== 'constructor' && !(key in methods) && typeof value === 'function') methods[key] = (value as (...args: unknown[]) => unknown).bind(adapter);
    }
  }
  return methods as T;
}
