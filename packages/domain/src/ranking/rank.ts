import type { RankExplanation, SearchMode } from '@gm/contracts';

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
 * Reciprocal rank fusion's constant: an item's fused score is the sum of 1/(k + rank) over the
 * legs that found it, so agreement between the legs outweighs one leg's top place, and no leg's
 * raw score scale matters. Cormack et al. (2009) used 60; measured here (`pnpm bench:retrieval`,
 * docs/embedding.md) 10 is better on both sets: a leg's top places count more against the noise
 * deep in the other leg (paraphrases Recall@5 72.5 → 81.3, LoCoMo recall@5 45.6 → 49.4).
 */
export const RRF_K = 10;

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

/** The reciprocal-rank-fusion score of an item found at these 1-based ranks. */
export const fusedScore = (lexicalRank: number | undefined, vectorRank: number | undefined): number =>
  (lexicalRank === undefined ? 0 : 1 / (RRF_K + lexicalRank)) + (vectorRank === undefined ? 0 : 1 / (RRF_K + vectorRank));

/**
 * Explainable ranking (§6.3 step 6): each component is in 0..1 and reported; the score is
 * their weighted sum. Relevance is what the mode makes it:
 * - lexical: BM25 normalised to the best hit of this result set;
 * - semantic: the cosine similarity (0 below zero);
 * - hybrid: the reciprocal-rank-fusion score, normalised to the best fused score.
 * Ties break by record id so that equal inputs always give the same order.
 */
export function rank<T extends RankInput>(items: T[], now: string, mode: SearchMode = 'lexical'): Array<T & { rank: RankExplanation }> {
  const best = Math.max(0, ...items.map((i) => i.lexicalScore));
  const bestFused = Math.max(0, ...items.map((i) => fusedScore(i.lexicalRank, i.vectorRank)));
  const nowMs = Date.parse(now);
  return items
    .map((item) => {
      // Negative raw scores (no match) count as no lexical credit rather than a penalty.
      const lexical = best > 0 ? Math.max(0, item.lexicalScore) / best : 0;
      const ageDays = Math.max(0, nowMs - Date.parse(item.createdAt)) / 86_400_000;
      const recency = Math.pow(0.5, ageDays / RECENCY_HALF_LIFE_DAYS);
      const confidence = Math.min(1, Math.max(0, item.confidence));
      const fused = fusedScore(item.lexicalRank, item.vectorRank);
      const relevance = mode === 'lexical' ? lexical : mode === 'semantic' ? Math.max(0, item.similarity ?? 0) : bestFused > 0 ? fused / bestFused : 0;
      const score = RANK_WEIGHTS.lexical * relevance + RANK_WEIGHTS.confidence * confidence + RANK_WEIGHTS.recency * recency;
      const explained: RankExplanation = { lexical: round(lexical), confidence: round(confidence), recency: round(recency), score: round(score) };
      if (mode !== 'lexical') {
        explained.mode = mode;
        if (item.lexicalRank !== undefined) explained.lexicalRank = item.lexicalRank;
        if (item.vectorRank !== undefined) explained.vectorRank = item.vectorRank;
        if (item.similarity !== undefined) explained.similarity = round(item.similarity);
        explained.fused = round(fused);
      }
      return { ...item, rank: explained };
    })
    .sort((a, b) => b.rank.score - a.rank.score || (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : 0));
}
