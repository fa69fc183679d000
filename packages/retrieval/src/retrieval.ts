import { createHash } from 'node:crypto';
import {
  GovernedMemoryError, type CapabilityClaims, type EvidencePacket, type MemoryRecord, type PacketItem, type PacketValidation, type RecordMeta, type RecordStatus,
  type SearchMode, type SearchRequest,
} from '@gm/contracts';
import { acceptCallerEmbedding, estimateTokens, lexicalQueryText, fitToBudget, isReadableById, isSearchable, rank, recordPartition, semanticWeightFor, type RankInput } from '@gm/domain';
import type { EmbeddingModel } from '@gm/embedding';
import { newUlid } from '@gm/ids';
import type { Metrics } from '@gm/observability';
import type { PolicyDecisionPoint } from '@gm/policy';
import type { RecordQueryFilter, SearchIndex, VectorIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';

/**
 * What a read needs: the index, the state and the policy decision point. The broker serves
 * reads with it; the receipt-verifier replays reads with it (§8.3), so both ask one rule.
 */
export interface ReadPathDeps {
  index: SearchIndex;
  state: StateStore;
  pdp: PolicyDecisionPoint;
  /** The semantic leg (§6.7): absent where the runtime keeps no vectors, and then searches are lexical. */
  semantic?: SemanticLeg;
}

/** Nearest-neighbour search over the records' embeddings, and the model that embeds a query. */
export interface SemanticLeg {
  vectors: VectorIndex;
  model: EmbeddingModel;
}

export interface RetrievalDeps extends ReadPathDeps {
  metrics: Metrics;
  packetTtlMs: number;
  cacheTtlMs: number;
}

export const partitionOf = (m: RecordMeta): string => recordPartition(m);

/** Whether this capability's tenant, purpose and partitions cover the record, whatever its status. */
export const coversRecord = (meta: Pick<RecordMeta, 'tenantId' | 'purposes' | 'resource' | 'visibility' | 'sensitivity' | 'owner'>, claims: CapabilityClaims, partitions: Set<string>): boolean =>
  meta.tenantId === claims.tenant && meta.purposes.includes(claims.purpose) && partitions.has(recordPartition(meta));


/** Whether a reader may see this record now: the one rule behind get, search and validate (`byId`: a get, which also answers superseded records). */
export function isReadable(
  meta: RecordMeta | undefined | null, claims: CapabilityClaims, partitions: Set<string>, now: Date, tombstoned: boolean, byId = false,
): meta is RecordMeta {
  return (
    !!meta &&
    !tombstoned &&
    (byId ? isReadableById(meta.status) : isSearchable(meta.status)) &&
    Date.parse(meta.expiresAt) > now.getTime() &&
    coversRecord(meta, claims, partitions)
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
  if (!isReadable(meta, claims, partitions, now, tombstoned, true)) return null;
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
  const mode = searchModeOf(deps, request);
  const policyRevision = await deps.state.policyRevisions.current(claims.tenant);
  const partitions = await deps.pdp.authorizedPartitions({ claims, action: 'search' });
  if (partitions.length === 0) return { policyRevision, ranked: [] };
  const generation = await deps.state.generations.current(claims.tenant);
  const cacheKey = createHash('sha256')
    .update(JSON.stringify([
      claims.tenant, partitions, claims.purpose, request.query, request.subjectId ?? null, request.kinds ?? null, request.limit, request.tokenBudget,
      policyRevision, generation, mode, request.embedding ?? null,
    ]))
    .digest('hex');
  const cached = await deps.state.cache.get(cacheKey);
  cache.onLookup?.(cached !== null);
  if (cached === null) {
    const ranked = await searchIndex(deps, claims, partitions, request, now, mode);
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
  await deps.state.packets.put({ packet, tenantId: claims.tenant, agentId: claims.sub, principalId: claims.act.sub, invalidated: [] }, deps.packetTtlMs);
  deps.metrics.searchLatency.observe((performance.now() - started) / 1000);
  deps.metrics.itemsReturned.observe(items.length);
  return packet;
}

/** What a search request is served of the ranked results: the best that fit its token budget, at most `limit`. */
const servedOf = (ranked: Ranked[], request: SearchRequest): Ranked[] =>
  fitToBudget(ranked, request.tokenBudget, request.limit, (i) => estimateTokens(i.excerpt));

/**
 * The mode a search runs in: the one asked for, else hybrid where vectors are kept. Asking for
 * a semantic leg the runtime does not have is a 422, never a lexical answer in disguise.
 */
export function searchModeOf(deps: Pick<ReadPathDeps, 'semantic'>, request: Pick<SearchRequest, 'mode' | 'embedding'>): SearchMode {
  const mode = request.mode ?? (deps.semantic === undefined ? 'lexical' : 'hybrid');
  if (mode !== 'lexical' && deps.semantic === undefined) {
    throw new GovernedMemoryError('MEM_VALIDATION', `mode "${mode}" needs vectors, and this runtime keeps none (MEMORY_SEMANTIC=off); use mode "lexical"`);
  }
  if (request.embedding !== undefined && mode === 'lexical') {
    throw new GovernedMemoryError('MEM_VALIDATION', 'an embedding is used only by a semantic or hybrid search; this one is lexical');
  }
  return mode;
}

/** The query's vector: the caller's own if it came from the runtime's model, else embedded here. */
async function queryVector(leg: SemanticLeg, request: SearchRequest): Promise<Float32Array> {
  const { model } = leg;
  if (request.embedding === undefined) {
    const [vector] = await model.embed([request.query], 'query');
    if (vector === undefined) throw new Error('the embedding model returned no vector');
    return vector;
  }
  return Float32Array.from(acceptCallerEmbedding(request.embedding, model));
}

/** What ranking and the packet need of one candidate, whichever leg found it. */
interface Candidate extends RankInput {
  excerpt: string;
  provenanceRefs: PacketItem['provenanceRefs'];
}

async function searchIndex(deps: ReadPathDeps, claims: CapabilityClaims, partitions: string[], request: SearchRequest, now: Date, mode: SearchMode): Promise<Ranked[]> {
  // Both legs get the same authorised partitions and the same filters (§6.3 step 4), and
  // filter inside their search: neither ranks a record the asker may not see.
  const filters: RecordQueryFilter = {
    tenantId: claims.tenant,
    partitions,
    purpose: claims.purpose,
    now: now.toISOString(),
    ...(request.subjectId === undefined ? {} : { subjectId: request.subjectId }),
    ...(request.kinds === undefined ? {} : { kinds: request.kinds }),
  };
  const depth = Math.min(200, request.limit * 4);
  const [lexicalHits, vectorHits] = await Promise.all([
    mode === 'semantic' ? [] : deps.index.search({ ...filters, text: lexicalQueryText(request.query), limit: depth }),
    mode === 'lexical' || deps.semantic === undefined ? [] : semanticHits(deps.semantic, request, filters, depth),
  ]);
  const candidates = new Map<string, Candidate>();
  lexicalHits.forEach((h, i) => {
    candidates.set(h.doc.recordId, {
      recordId: h.doc.recordId, lexicalScore: h.lexicalScore, lexicalRank: i + 1, confidence: h.doc.confidence, createdAt: h.doc.createdAt,
      excerpt: h.doc.content, provenanceRefs: h.doc.provenance,
    });
  });
  const onlySemantic: Array<{ recordId: string; similarity: number; vectorRank: number }> = [];
  vectorHits.forEach((h, i) => {
    const found = candidates.get(h.recordId);
    if (found !== undefined) Object.assign(found, { similarity: h.similarity, vectorRank: i + 1 });
    else onlySemantic.push({ recordId: h.recordId, similarity: h.similarity, vectorRank: i + 1 });
  });
  // Step 5 before step 6: a tombstoned or no-longer-active copy never reaches the ranker.
  const readable = await readableMetas(deps, claims, new Set(partitions), [...candidates.keys(), ...onlySemantic.map((h) => h.recordId)], now);
  // A record only the semantic leg found: its excerpt and provenance come from the record itself.
  const semanticOnly = onlySemantic.filter((h) => readable.has(h.recordId));
  const contents = await deps.state.contents.getMany(claims.tenant, semanticOnly.map((h) => h.recordId));
  for (const h of semanticOnly) {
    const meta = readable.get(h.recordId);
    const content = contents.get(h.recordId);
    if (meta === undefined || content === undefined) continue;
    candidates.set(h.recordId, {
      recordId: h.recordId, lexicalScore: 0, similarity: h.similarity, vectorRank: h.vectorRank, confidence: meta.confidence, createdAt: meta.createdAt,
      excerpt: content, provenanceRefs: meta.provenance,
    });
  }
  const ranking = [...candidates.values()].filter((c) => readable.has(c.recordId));
  const ranked = rank(ranking, now.toISOString(), mode, mode === 'hybrid' ? hybridWeight(request.query, ranking) : undefined);
  return ranked.map((r) => ({
    recordId: r.recordId, excerpt: r.excerpt, provenanceRefs: r.provenanceRefs, allowedUse: [claims.purpose], rank: r.rank,
  }));
}

/** A hybrid fusion's semantic weight: how much of the query the best readable keyword hit holds in words. */
function hybridWeight(query: string, readable: readonly Candidate[]): number {
  const best = readable.reduce<Candidate | undefined>((b, c) => (c.lexicalRank !== undefined && (b?.lexicalRank === undefined || c.lexicalRank < b.lexicalRank) ? c : b), undefined);
  return semanticWeightFor(query, best?.excerpt);
}

/** The k nearest neighbours inside the filters that are similar enough to count (the model's `minSimilarity`). */
async function semanticHits(
  leg: SemanticLeg, request: SearchRequest, filters: RecordQueryFilter, k: number,
): Promise<Array<{ recordId: string; similarity: number }>> {
  const vector = await queryVector(leg, request);
  const hits = await leg.vectors.knn({ ...filters, modelId: leg.model.modelId, vector, k });
  return hits.filter((h) => h.similarity >= leg.model.minSimilarity);
}

/** The records of `ids` this reader may see now (isReadable), by id: one tombstone read and one record read. */
async function readableMetas(deps: ReadPathDeps, claims: CapabilityClaims, partitions: Set<string>, ids: string[], now: Date): Promise<Map<string, RecordMeta>> {
  const tombstoned = await deps.state.tombstones.filterTombstoned(claims.tenant, ids);
  const metas = await deps.state.records.getMany(claims.tenant, ids);
  return new Map([...metas].filter(([id, meta]) => isReadable(meta, claims, partitions, now, tombstoned.has(id))));
}

async function keepReadable<T extends { recordId: string }>(deps: ReadPathDeps, claims: CapabilityClaims, partitions: Set<string>, items: T[], now: Date): Promise<T[]> {
  const readable = await readableMetas(deps, claims, partitions, items.map((i) => i.recordId), now);
  return items.filter((i) => readable.has(i.recordId));
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
  const readable = await readableMetas(deps, claims, partitions, ids, now);
  const items = ids.map((recordId) => ({ recordId, valid: fresh && !stored.invalidated.includes(recordId) && readable.has(recordId) }));
  return { valid: fresh && items.every((i) => i.valid), items };
}
