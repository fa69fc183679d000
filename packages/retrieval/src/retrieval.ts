import { createHash } from 'node:crypto';
import {
  type CapabilityClaims, type EvidencePacket, type MemoryRecord, type PacketItem, type PacketValidation, type RecordMeta, type SearchRequest,
} from '@gm/contracts';
import { estimateTokens, fitToBudget, rank, recordPartition } from '@gm/domain';
import { newUlid } from '@gm/ids';
import type { Metrics } from '@gm/observability';
import type { PolicyDecisionPoint } from '@gm/policy';
import type { SearchIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';

/**
 * What a read needs: the index, the state and the policy decision point. The broker serves
 * reads with it; the receipt-verifier replays reads with it (§8.3), so both ask one rule.
 */
export interface ReadPathDeps {
  index: SearchIndex;
  state: StateStore;
  pdp: PolicyDecisionPoint;
}

export interface RetrievalDeps extends ReadPathDeps {
  metrics: Metrics;
  packetTtlMs: number;
  cacheTtlMs: number;
}

export const partitionOf = (m: RecordMeta): string => recordPartition(m);

/** Whether a reader may see this record now: the one rule behind get, search and validate. */
export function isReadable(meta: RecordMeta | undefined | null, claims: CapabilityClaims, partitions: Set<string>, now: Date, tombstoned: boolean): meta is RecordMeta {
  return (
    !!meta &&
    !tombstoned &&
    meta.tenantId === claims.tenant &&
    meta.status === 'active' &&
    Date.parse(meta.expiresAt) > now.getTime() &&
    meta.purposes.includes(claims.purpose) &&
    partitions.has(partitionOf(meta))
  );
}

/**
 * Get by id (`GET /v1/memories/{id}`): the record with its content if this capability may
 * read it now, else null — the caller answers the uniform 404 for every null.
 */
export async function readRecord(deps: ReadPathDeps, claims: CapabilityClaims, id: string, now: Date): Promise<(RecordMeta & Pick<MemoryRecord, 'content'>) | null> {
  const meta = await deps.state.records.get(claims.tenant, id);
  const partitions = new Set(await deps.pdp.authorizedPartitions({ claims, action: 'read' }));
  const tombstoned = (await deps.state.tombstones.filterTombstoned(claims.tenant, [id])).size > 0;
  if (!isReadable(meta, claims, partitions, now, tombstoned)) return null;
  const content = await deps.state.contents.get(claims.tenant, id);
  return content === null ? null : { ...meta, content };
}

type Ranked = PacketItem;

/**
 * How a read uses the retrieval cache: the API reads and fills it; a verification replay
 * only reads it, so that a probe never leaves a copy (or a cache entry) behind.
 */
export interface CacheUse {
  fill: boolean;
  /** Told whether the lookup hit (metrics). */
  onLookup?: (hit: boolean) => void;
}

/**
 * Steps 2–6 of partition-first retrieval (§6.3): PDP → cache → search inside the authorised
 * partitions → drop tombstoned and no-longer-active records → rank. Budget and packet are
 * the caller's.
 */
export async function rankedResults(
  deps: ReadPathDeps & { cacheTtlMs?: number }, claims: CapabilityClaims, request: SearchRequest, now: Date, cache: CacheUse,
): Promise<{ policyRevision: number; ranked: Ranked[] }> {
  const policyRevision = await deps.state.policyRevisions.current(claims.tenant);
  const partitions = await deps.pdp.authorizedPartitions({ claims, action: 'search' });
  if (partitions.length === 0) return { policyRevision, ranked: [] };
  const generation = await deps.state.generations.current(claims.tenant);
  const cacheKey = createHash('sha256')
    .update(JSON.stringify([
      claims.tenant, partitions, claims.purpose, request.query, request.subjectId ?? null, request.kinds ?? null, request.limit, request.tokenBudget,
      policyRevision, generation,
    ]))
    .digest('hex');
  const cached = await deps.state.cache.get(cacheKey);
  cache.onLookup?.(cached !== null);
  if (cached === null) {
    const ranked = await searchIndex(deps, claims, partitions, request, now);
    if (cache.fill) {
      // Only what this request is served: the entry holds (and indexes, for deletions to find)
      // at most `limit` excerpts instead of every candidate, and a hit serves what the miss did.
      const served = servedOf(ranked, request);
      await deps.state.cache.set(cacheKey, JSON.stringify(served), claims.tenant, served.map((r) => r.recordId), deps.cacheTtlMs ?? 0);
    }
    return { policyRevision, ranked };
  }
  // Cached results are re-checked too: tombstones and the record hash have the last word.
  return { policyRevision, ranked: await keepReadable(deps, claims, new Set(partitions), JSON.parse(cached) as Ranked[], now) };
}

/**
 * Partition-first retrieval (§6.3): PDP → cache → search inside the authorised partitions →
 * drop tombstoned and no-longer-active records → rank → fit the budget → evidence packet.
 */
export async function search(deps: RetrievalDeps, claims: CapabilityClaims, request: SearchRequest, now: Date): Promise<EvidencePacket> {
  const started = performance.now();
  const { policyRevision, ranked } = await rankedResults(deps, claims, request, now, {
    fill: true, onLookup: (hit) => deps.metrics.cacheHits.inc({ result: hit ? 'hit' : 'miss' }),
  });
  const items = servedOf(ranked, request);
  const packet: EvidencePacket = {
    packetId: newUlid(now.getTime()),
    runId: claims.run,
    policyRevision,
    expiresAt: new Date(now.getTime() + deps.packetTtlMs).toISOString(),
    items,
  };
  await deps.state.packets.put({ packet, tenantId: claims.tenant, agentId: claims.sub, invalidated: [] }, deps.packetTtlMs);
  deps.metrics.searchLatency.observe((performance.now() - started) / 1000);
  deps.metrics.itemsReturned.observe(items.length);
  return packet;
}

/** What a search request is served of the ranked results: the best that fit its token budget, at most `limit`. */
const servedOf = (ranked: Ranked[], request: SearchRequest): Ranked[] =>
  fitToBudget(ranked, request.tokenBudget, request.limit, (i) => estimateTokens(i.excerpt));

async function searchIndex(deps: ReadPathDeps, claims: CapabilityClaims, partitions: string[], request: SearchRequest, now: Date): Promise<Ranked[]> {
  const hits = await deps.index.search({
    tenantId: claims.tenant,
    partitions,
    purpose: claims.purpose,
    text: request.query,
    now: now.toISOString(),
    limit: Math.min(200, request.limit * 4),
    ...(request.subjectId === undefined ? {} : { subjectId: request.subjectId }),
    ...(request.kinds === undefined ? {} : { kinds: request.kinds }),
  });
  // Step 5 before step 6: a tombstoned or no-longer-active copy never reaches the ranker.
  const readable = new Set(
    (await keepReadable(deps, claims, new Set(partitions), hits.map((h) => ({ recordId: h.doc.recordId })), now)).map((h) => h.recordId),
  );
  const ranked = rank(
    hits
      .filter((h) => readable.has(h.doc.recordId))
      .map((h) => ({
        recordId: h.doc.recordId, lexicalScore: h.lexicalScore, confidence: h.doc.confidence, createdAt: h.doc.createdAt,
        excerpt: h.doc.content, provenanceRefs: h.doc.provenance,
      })),
    now.toISOString(),
  );
  return ranked.map((r) => ({
    recordId: r.recordId, excerpt: r.excerpt, provenanceRefs: r.provenanceRefs, allowedUse: [claims.purpose], rank: r.rank,
  }));
}

async function keepReadable<T extends { recordId: string }>(deps: ReadPathDeps, claims: CapabilityClaims, partitions: Set<string>, items: T[], now: Date): Promise<T[]> {
  const ids = items.map((i) => i.recordId);
  const tombstoned = await deps.state.tombstones.filterTombstoned(claims.tenant, ids);
  const metas = await deps.state.records.getMany(claims.tenant, ids);
  return items.filter((i) => isReadable(metas.get(i.recordId), claims, partitions, now, tombstoned.has(i.recordId)));
}

/**
 * The action gate (§6.5): before acting on a packet, downstream learns which items are still
 * valid — same tenant, same policy revision, record still readable by this caller.
 */
export async function validatePacket(deps: ReadPathDeps, claims: CapabilityClaims, packetId: string, now: Date): Promise<PacketValidation | null> {
  const stored = await deps.state.packets.get(packetId);
  if (!stored || stored.tenantId !== claims.tenant) return null;
  const revision = await deps.state.policyRevisions.current(claims.tenant);
  const partitions = new Set(await deps.pdp.authorizedPartitions({ claims, action: 'cite' }));
  const fresh = revision === stored.packet.policyRevision && Date.parse(stored.packet.expiresAt) > now.getTime();
  const ids = stored.packet.items.map((i) => i.recordId);
  const tombstoned = await deps.state.tombstones.filterTombstoned(claims.tenant, ids);
  const metas = await deps.state.records.getMany(claims.tenant, ids);
  const items = ids.map((recordId) => ({
    recordId,
    valid: fresh && !stored.invalidated.includes(recordId) && isReadable(metas.get(recordId), claims, partitions, now, tombstoned.has(recordId)),
  }));
  return { valid: fresh && items.every((i) => i.valid), items };
}
