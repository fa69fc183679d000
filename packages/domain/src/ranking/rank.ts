import type { RankExplanation, SearchMode } from '@gm/contracts';
import { queryCoverage } from './query-coverage.ts';

export interface RankInput {
  recordId: string;
  /** Raw lexical relevance from the index (BM25); any positive scale; 0 when the lexical leg did not find it. */
  lexicalScore: number;
  confidence: number;
  createdAt: string;
  /** The semantic leg's cosine similarity, when that leg found it. */
  similarity?: number;
  /** 1-based places in each leg's list, when that leg found it (semantic and hybrid searches). */
  lexicalRank?: number;
  vectorRank?: number;
}

/** Weights are part of the explanation a reader gets: relevance (the mode's) dominates. */
export const RANK_WEIGHTS = { lexical: 0.6, confidence: 0.25, recency: 0.15 } as const;
/** A memory loses half its recency credit every 30 days. */
export const RECENCY_HALF_LIFE_DAYS = 30;
/**
 * Hybrid fusion (§6.7): a convex combination of the two legs, each min-max normalised over this
 * result set, whose semantic weight follows the query. When the lexical leg's best hit holds more
 * than a quarter of the query's terms (`queryCoverage`), the words matched what was asked and the
 * lexical leg leads (semantic weight 0.4); otherwise its hits are incidental word matches and
 * meaning leads (0.9: the lexical leg only breaks near-ties). Chosen on LoCoMo's development
 * conversations against reciprocal rank fusion and fixed weights (`pnpm bench:retrieval --sweep 1`,
 * docs/embedding.md#retrieval-quality): fixed weights trade one set for the other (0.8 keeps the
 * paraphrases and loses a fifth of LoCoMo's evidence), the adaptive weight keeps both.
 */
export const HYBRID_FUSION = { coverageAbove: 0.25, semanticWeightWhenWordsMatch: 0.4, semanticWeightOtherwise: 0.9 } as const;

/** The semantic leg's weight for a query whose lexical leg's best readable hit is `bestLexicalText` (none: meaning leads). */
export function semanticWeightFor(query: string, bestLexicalText: string | undefined): number {
  const matched = bestLexicalText !== undefined && queryCoverage(query, bestLexicalText) > HYBRID_FUSION.coverageAbove;
  return matched ? HYBRID_FUSION.semanticWeightWhenWordsMatch : HYBRID_FUSION.semanticWeightOtherwise;
}

/** Min-max over the values a leg gave: its best 1, its worst 0, a lone value 1. */
function minMax(values: readonly number[]): (x: number) => number {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return (x) => (hi > lo ? (x - lo) / (hi - lo) : 1);
}

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

/**
 * Explainable ranking (§6.3 step 6): each component is in 0..1 and reported; the score is
 * their weighted sum. Relevance is what the mode makes it:
 * - lexical: BM25 normalised to the best hit of this result set;
 * - semantic: the cosine similarity (0 below zero);
 * - hybrid: `semanticWeight` × the similarity plus the rest × the BM25, each min-max normalised
 *   over the items its leg found (a leg that did not find an item gives it 0), `HYBRID_FUSION`.
 * Ties break by record id so that equal inputs always give the same order.
 */
export function rank<T extends RankInput>(
  items: T[], now: string, mode: SearchMode = 'lexical', semanticWeight: number = HYBRID_FUSION.semanticWeightOtherwise,
): Array<T & { rank: RankExplanation }> {
  const best = Math.max(0, ...items.map((i) => i.lexicalScore));
  const lexicalLeg = minMax(items.filter((i) => i.lexicalRank !== undefined).map((i) => i.lexicalScore));
  const semanticLeg = minMax(items.flatMap((i) => (i.vectorRank === undefined || i.similarity === undefined ? [] : [i.similarity])));
  const fusedOf = (i: RankInput): number =>
    semanticWeight * (i.vectorRank === undefined || i.similarity === undefined ? 0 : semanticLeg(i.similarity))
    + (1 - semanticWeight) * (i.lexicalRank === undefined ? 0 : lexicalLeg(i.lexicalScore));
  const nowMs = Date.parse(now);
  return items
    .map((item) => {
      // Negative raw scores (no match) count as no lexical credit rather than a penalty.
      const lexical = best > 0 ? Math.max(0, item.lexicalScore) / best : 0;
      const ageDays = Math.max(0, nowMs - Date.parse(item.createdAt)) / 86_400_000;
      const recency = Math.pow(0.5, ageDays / RECENCY_HALF_LIFE_DAYS);
      const confidence = Math.min(1, Math.max(0, item.confidence));
      const fused = fusedOf(item);
      const relevance = mode === 'lexical' ? lexical : mode === 'semantic' ? Math.max(0, item.similarity ?? 0) : fused;
      const score = RANK_WEIGHTS.lexical * relevance + RANK_WEIGHTS.confidence * confidence + RANK_WEIGHTS.recency * recency;
      const explained: RankExplanation = { lexical: round(lexical), confidence: round(confidence), recency: round(recency), score: round(score) };
      if (mode !== 'lexical') {
        explained.mode = mode;
        if (item.lexicalRank !== undefined) explained.lexicalRank = item.lexicalRank;
        if (item.vectorRank !== undefined) explained.vectorRank = item.vectorRank;
        if (item.similarity !== undefined) explained.similarity = round(item.similarity);
        if (mode === 'hybrid') Object.assign(explained, { fused: round(fused), semanticWeight });
      }
      return { ...item, rank: explained };
    })
    .sort((a, b) => b.rank.score - a.rank.score || (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : 0));
}
