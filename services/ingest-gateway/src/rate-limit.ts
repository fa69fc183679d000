/**
 * The HTTP edge's per-principal rate limit on memory.ingest (design §9.3, docs/ingest.md#rate-limit):
 * `MEMORY_RATE_LIMIT_PER_MINUTE` requests per verified principal per minute, counted in Redis so
 * that every gateway instance adds to the same count — a principal whose requests spread over the
 * partitions of several instances still gets the limit once. A request over it is answered
 * MEM_RATE_LIMITED (retriable), the code of the HTTP edge's 429, and is not admitted.
 */
import { GovernedMemoryError, type CapabilityClaims } from '@gm/contracts';

/** The HTTP edge's window (@fastify/rate-limit's `timeWindow`). */
export const RATE_WINDOW_MS = 60_000;

export interface IngestRateLimit {
  perMinute: number;
  /** The state store's `rateCounters` (@gm/state-store): Redis on the distributed runtime. */
  counters: {
    add(window: number, windowMs: number, counts: ReadonlyArray<{ tenant: string; principal: string; requests: number }>): Promise<number[]>;
  };
}

export const rateLimited = (): GovernedMemoryError =>
  new GovernedMemoryError('MEM_RATE_LIMITED', 'too many requests for this principal; slow down', { retriable: true });

/**
 * Counts a batch's verified requests, one counter per principal, in one pipeline, and answers
 * for each request (in the order given) whether it is within its principal's limit: the first
 * ones of a principal are, up to what its window has left. Every verified request counts, as
 * every request counts on the HTTP edge, the refused ones too. A batch handed over again (an
 * outage, a poison message split out) is counted again: after a failure a principal may be
 * limited early, never late.
 */
export async function withinRateLimit(limit: IngestRateLimit, nowMs: number, writers: readonly CapabilityClaims[]): Promise<boolean[]> {
  const byPrincipal = new Map<string, { tenant: string; principal: string; requests: number }>();
  // JSON of the parts: no tenant and principal pair can be mistaken for another.
  const principalOf = (claims: CapabilityClaims): string => JSON.stringify([claims.tenant, claims.act.sub]);
  for (const claims of writers) {
    const key = principalOf(claims);
    const entry = byPrincipal.get(key) ?? { tenant: claims.tenant, principal: claims.act.sub, requests: 0 };
    entry.requests += 1;
    byPrincipal.set(key, entry);
  }
  if (byPrincipal.size === 0) return [];
  const entries = [...byPrincipal.values()];
  const totals = await limit.counters.add(Math.floor(nowMs / RATE_WINDOW_MS), RATE_WINDOW_MS, entries);
  // What each principal may still send in this window, before this batch.
  const left = new Map([...byPrincipal.keys()].map((key, i) => [key, limit.perMinute - ((totals[i] ?? Infinity) - (entries[i]?.requests ?? 0))]));
  return writers.map((claims) => {
    const key = principalOf(claims);
    const remaining = left.get(key) ?? 0;
    left.set(key, remaining - 1);
    return remaining > 0;
  });
}
