import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import {
  type CapabilityClaims, type EvidencePacket, type PacketItem, type PacketValidation, type RecordMeta, type SearchRequest,
} from '@gm/contracts';
import { estimateTokens, fitToBudget, partitionKey, rank } from '@gm/domain';
import type { Metrics } from '@gm/observability';
import type { PolicyDecisionPoint } from '@gm/policy';
import type { SearchIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';

export interface RetrievalDeps {
  index: SearchIndex;
  state: StateStore;
  pdp: PolicyDecisionPoint;
  metrics: Metrics;
  packetTtlMs: number;
  cacheTtlMs: number;
}

export const partitionOf = (m: RecordMeta): string =>
  partitionKey({
    tenantId: m.tenantId, resource: m.resource, visibility: m.visibility, sensitivity: m.sensitivity,
    ownerPrincipalId: m.owner.principalId,
  });

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

type Ranked = PacketItem;

/**
 * Partition-first retrieval (§6.3): PDP → cache → search inside the authorised partitions →
 * drop tombstoned and no-longer-active records → rank → fit the budget → evidence packet.
 */
export async function search(deps: RetrievalDeps, claims: CapabilityClaims, request: SearchRequest, now: Date): Promise<EvidencePacket> {
  const started = performance.now();
  const policyRevision = await deps.state.policyRevisions.current(claims.tenant);
  const partitions = await deps.pdp.authorizedPartitions({ claims, action: 'search', policyRevision });
  let ranked: Ranked[] = [];
  if (partitions.length > 0) {
    const generation = await deps.state.generations.current(claims.tenant);
    const cacheKey = createHash('sha256')
      .update(JSON.stringify([claims.tenant, partitions, claims.purpose, request.query, request.subjectId ?? null, request.kinds ?? null, request.limit, policyRevision, generation]))
      .digest('hex');
    const cached = await deps.state.cache.get(cacheKey);
    if (cached !== null) {
      deps.metrics.cacheHits.inc({ result: 'hit' });
      ranked = JSON.parse(cached) as Ranked[];
    } else {
      deps.metrics.cacheHits.inc({ result: 'miss' });
      ranked = await searchIndex(deps, claims, partitions, request, now);
      await deps.state.cache.set(cacheKey, JSON.stringify(ranked), claims.tenant, ranked.map((r) => r.recordId), deps.cacheTtlMs);
    }
    // Cached results are re-checked too: tombstones and the record hash have the last word.
    if (cached !== null) ranked = await keepReadable(deps, claims, new Set(partitions), ranked, now);
  }
  const items = fitToBudget(ranked, request.tokenBudget, request.limit, (i) => estimateTokens(i.excerpt));
  const packet: EvidencePacket = {
    packetId: ulid(now.getTime()),
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

async function searchIndex(deps: RetrievalDeps, claims: CapabilityClaims, partitions: string[], request: SearchRequest, now: Date): Promise<Ranked[]> {
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

async function keepReadable<T extends { recordId: string }>(deps: RetrievalDeps, claims: CapabilityClaims, partitions: Set<string>, items: T[], now: Date): Promise<T[]> {
  const ids = items.map((i) => i.recordId);
  const tombstoned = await deps.state.tombstones.filterTombstoned(claims.tenant, ids);
  const metas = await deps.state.records.getMany(claims.tenant, ids);
  return items.filter((i) => isReadable(metas.get(i.recordId), claims, partitions, now, tombstoned.has(i.recordId)));
}

/**
 * The action gate (§6.5): before acting on a packet, downstream learns which items are still
 * valid — same tenant, same policy revision, record still readable by this caller.
 */
export async function validatePacket(deps: RetrievalDeps, claims: CapabilityClaims, packetId: string, now: Date): Promise<PacketValidation | null> {
  const stored = await deps.state.packets.get(packetId);
  if (!stored || stored.tenantId !== claims.tenant) return null;
  const revision = await deps.state.policyRevisions.current(claims.tenant);
  const partitions = new Set(await deps.pdp.authorizedPartitions({ claims, action: 'cite', policyRevision: revision }));
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
