import type { RankExplanation } from '@gm/contracts';

export interface RankInput {
  recordId: string;
  /** Raw lexical relevance from the index (BM25); any positive scale. */
  lexicalScore: number;
  confidence: number;
  createdAt: string;
}

/** Weights are part of the explanation a reader gets: lexical match dominates. */
export const RANK_WEIGHTS = { lexical: 0.6, confidence: 0.25, recency: 0.15 } as const;
/** A memory loses half its recency credit every 30 days. */
export const RECENCY_HALF_LIFE_DAYS = 30;

const round = (x: number): number => Math.round(x * 1e6) / 1e6;

/**
 * Explainable ranking (§6.3 step 6): each component is in 0..1 and reported; the score is
 * their weighted sum. Lexical scores are normalised to the best hit of this result set.
 * Ties break by record id so that equal inputs always give the same order.
 */
export function rank<T extends RankInput>(items: T[], now: string): Array<T & { rank: RankExplanation }> {
  const best = Math.max(0, ...items.map((i) => i.lexicalScore));
  // Negative raw scores (no match) count as no lexical credit rather than a penalty.
  const nowMs = Date.parse(now);
  return items
    .map((item) => {
      const lexical = best > 0 ? Math.max(0, item.lexicalScore) / best : 0;
      const ageDays = Math.max(0, nowMs - Date.parse(item.createdAt)) / 86_400_000;
      const recency = Math.pow(0.5, ageDays / RECENCY_HALF_LIFE_DAYS);
      const confidence = Math.min(1, Math.max(0, item.confidence));
      const score = RANK_WEIGHTS.lexical * lexical + RANK_WEIGHTS.confidence * confidence + RANK_WEIGHTS.recency * recency;
      return { ...item, rank: { lexical: round(lexical), confidence: round(confidence), recency: round(recency), score: round(score) } };
    })
    .sort((a, b) => b.rank.score - a.rank.score || (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : 0));
}
