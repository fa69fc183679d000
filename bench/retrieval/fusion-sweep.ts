/**
 * `pnpm bench:retrieval --sweep`: how candidate fusion functions would rank, computed offline
 * from each leg's own answer through the API (a lexical search's BM25 relative to its best hit,
 * a semantic search's cosine similarity, top 50 of each). Chooses the fusion on LoCoMo's
 * development split; the held-out figures are printed beside so the choice is seen to carry
 * over (docs/embedding.md#retrieval-quality).
 */
import { queryCoverage } from '@gm/domain';

export interface LegHit { id: string; score: number; text: string }
/** Each leg's own answer to `query`. */
export interface LegLists { query: string; lexical: LegHit[]; semantic: LegHit[] }

export interface Fusion {
  name: string;
  fuse(legs: LegLists): string[];
}

const rrf = (k: number): Fusion => ({
  name: `rrf k=${k}`,
  fuse: ({ lexical, semantic }) => {
    const scores = new Map<string, number>();
    lexical.forEach((h, i) => scores.set(h.id, (scores.get(h.id) ?? 0) + 1 / (k + i + 1)));
    semantic.forEach((h, i) => scores.set(h.id, (scores.get(h.id) ?? 0) + 1 / (k + i + 1)));
    return [...scores].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([id]) => id);
  },
});

/** Min-max over the leg's own list: its best hit 1, its worst 0 (one hit: 1). */
function minMax(hits: readonly LegHit[]): Map<string, number> {
  const scores = hits.map((h) => h.score);
  const lo = Math.min(...scores);
  const hi = Math.max(...scores);
  return new Map(hits.map((h) => [h.id, hi > lo ? (h.score - lo) / (hi - lo) : 1]));
}

/** α × the semantic leg + (1 − α) × the lexical leg, each min-max normalised; a leg that missed an item gives it 0. */
const convex = (alpha: number): Fusion => ({
  name: `convex α=${alpha.toFixed(2)}`,
  fuse: ({ lexical, semantic }) => {
    const lex = minMax(lexical);
    const sem = minMax(semantic);
    const ids = new Set([...lex.keys(), ...sem.keys()]);
    const scored = [...ids].map((id) => [id, alpha * (sem.get(id) ?? 0) + (1 - alpha) * (lex.get(id) ?? 0)] as const);
    return scored.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([id]) => id);
  },
});

/**
 * A convex fusion whose weight follows the query: the semantic leg's weight is `high` when its
 * best similarity reaches `floor` (meaning found something close), else `low`.
 */
const bySemanticConfidence = (floor: number, low: number, high: number): Fusion => ({
  name: `adaptive sim≥${floor.toFixed(2)} ${low}/${high}`,
  fuse: (legs) => convex((legs.semantic[0]?.score ?? 0) >= floor ? high : low).fuse(legs),
});

/**
 * The runtime's hybrid fusion and its neighbours (domain's `HYBRID_FUSION`): the semantic weight
 * is `matched` when the lexical leg's best hit holds more than `above` of the query's terms, else `otherwise`.
 */
const byQueryCoverage = (above: number, matched: number, otherwise: number): Fusion => ({
  name: `coverage>${above} ${matched}/${otherwise}`,
  fuse: (legs) => {
    const best = legs.lexical[0];
    return convex(best !== undefined && queryCoverage(legs.query, best.text) > above ? matched : otherwise).fuse(legs);
  },
});

export const FUSIONS: Fusion[] = [
  rrf(10), ...[0.4, 0.6, 0.8].map(convex),
  ...[0.6, 0.7].map((floor) => bySemanticConfidence(floor, 0.4, 0.8)),
  ...[0.2, 0.25, 0.34].flatMap((above) => [0.2, 0.3, 0.4, 0.5].map((matched) => byQueryCoverage(above, matched, 0.9))),
  byQueryCoverage(0.25, 0.4, 1),
];
