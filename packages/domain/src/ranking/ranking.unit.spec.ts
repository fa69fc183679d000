import { describe, expect, it } from 'vitest';
import { estimateTokens, fitToBudget } from './budget.ts';
import { lexicalQueryText, queryCoverage, termsOf } from './query-coverage.ts';
import { HYBRID_FUSION, RANK_WEIGHTS, RECENCY_HALF_LIFE_DAYS, rank, semanticWeightFor, type RankInput } from './rank.ts';

const NOW = '2025-03-01T12:00:00.000Z';
const daysAgo = (days: number): string => new Date(Date.parse(NOW) - days * 86_400_000).toISOString();
const hit = (recordId: string, overrides: Partial<RankInput> = {}): RankInput => ({
  recordId, lexicalScore: 5, confidence: 0.5, createdAt: daysAgo(1), ...overrides,
});
const ids = (items: Array<{ recordId: string }>): string[] => items.map((i) => i.recordId);

describe('rank (§6.3 step 6: lexical match, confidence, recency — explainable)', () => {
  it('ranks a better lexical match higher', () => {
    expect(ids(rank([hit('weak', { lexicalScore: 2 }), hit('strong', { lexicalScore: 9 })], NOW))).toEqual(['strong', 'weak']);
  });

  it('lets lexical match outweigh confidence', () => {
    const ranked = rank([hit('confident', { lexicalScore: 4, confidence: 1 }), hit('relevant', { lexicalScore: 10, confidence: 0.2 })], NOW);
    expect(ids(ranked)).toEqual(['relevant', 'confident']);
  });

  it('breaks an equal lexical match by higher confidence', () => {
    expect(ids(rank([hit('unsure', { confidence: 0.3 }), hit('sure', { confidence: 0.9 })], NOW))).toEqual(['sure', 'unsure']);
  });

  it('breaks equal lexical match and confidence by recency', () => {
    expect(ids(rank([hit('old', { createdAt: daysAgo(90) }), hit('fresh', { createdAt: daysAgo(2) })], NOW))).toEqual(['fresh', 'old']);
  });

  it('breaks full ties by record id, whatever the input order', () => {
    const items = [hit('mem-c'), hit('mem-a'), hit('mem-b')];
    expect(ids(rank(items, NOW))).toEqual(['mem-a', 'mem-b', 'mem-c']);
    expect(ids(rank([...items].reverse(), NOW))).toEqual(['mem-a', 'mem-b', 'mem-c']);
  });

  it('explains every item: components in 0..1, the score their weighted sum', () => {
    const ranked = rank(
      [
        hit('a', { lexicalScore: 12.5, confidence: 0.9, createdAt: daysAgo(0) }),
        hit('b', { lexicalScore: 3.1, confidence: 0.4, createdAt: daysAgo(45) }),
        hit('c', { lexicalScore: 0, confidence: 1, createdAt: daysAgo(400) }),
      ],
      NOW,
    );
    for (const { rank: r } of ranked) {
      for (const component of [r.lexical, r.confidence, r.recency]) {
        expect(component).toBeGreaterThanOrEqual(0);
        expect(component).toBeLessThanOrEqual(1);
      }
      const weighted = RANK_WEIGHTS.lexical * r.lexical + RANK_WEIGHTS.confidence * r.confidence + RANK_WEIGHTS.recency * r.recency;
      expect(r.score).toBeCloseTo(weighted, 5);
    }
  });

  it('scores the best hit\'s lexical match 1 and halves recency every half-life', () => {
    const ranked = rank(
      [hit('best', { lexicalScore: 8, createdAt: NOW }), hit('half', { lexicalScore: 4, createdAt: daysAgo(RECENCY_HALF_LIFE_DAYS) })],
      NOW,
    );
    expect(ranked.map((r) => [r.recordId, r.rank.lexical, r.rank.recency])).toEqual([
      ['best', 1, 1],
      ['half', 0.5, 0.5],
    ]);
  });

  it('keeps scores finite when nothing matched lexically', () => {
    const ranked = rank([hit('x', { lexicalScore: 0 }), hit('y', { lexicalScore: 0, confidence: 0.9 })], NOW);
    expect(ids(ranked)).toEqual(['y', 'x']);
    for (const { rank: r } of ranked) expect(r.lexical).toBe(0);
  });

  it('clamps an out-of-range confidence and keeps the caller\'s fields', () => {
    const [only] = rank([{ ...hit('x', { confidence: 1.7 }), excerpt: 'kept' }], NOW);
    expect(only?.rank.confidence).toBe(1);
    expect(only?.excerpt).toBe('kept');
  });
});

describe('fitToBudget (§6.3 step 7)', () => {
  const item = (recordId: string, tokens: number) => ({ recordId, tokens });
  const tokensOf = (i: { tokens: number }): number => i.tokens;

  it('skips a long low-ranked item and still includes the shorter ones after it', () => {
    const ranked = [item('a', 100), item('long', 500), item('c', 100), item('d', 100)];
    expect(ids(fitToBudget(ranked, 300, 10, tokensOf))).toEqual(['a', 'c', 'd']);
  });

  it('keeps rank order and takes an item that fits exactly', () => {
    expect(ids(fitToBudget([item('a', 60), item('b', 40), item('c', 1)], 100, 10, tokensOf))).toEqual(['a', 'b']);
  });

  it('respects the item limit', () => {
    expect(ids(fitToBudget([item('a', 1), item('b', 1), item('c', 1)], 1_000, 2, tokensOf))).toEqual(['a', 'b']);
  });

  it('returns nothing when nothing fits', () => {
    expect(fitToBudget([item('a', 50), item('b', 80)], 10, 10, tokensOf)).toEqual([]);
    expect(fitToBudget([item('a', 1)], 0, 10, tokensOf)).toEqual([]);
    expect(fitToBudget([item('a', 1)], 100, 0, tokensOf)).toEqual([]);
    expect(fitToBudget([], 100, 10, tokensOf)).toEqual([]);
  });

  it('estimates about four characters per token, rounding up', () => {
    expect([estimateTokens(''), estimateTokens('abcd'), estimateTokens('abcde'), estimateTokens('x'.repeat(400))]).toEqual([0, 1, 2, 100]);
  });
});

describe('rank in semantic and hybrid modes (§6.7: a convex fusion whose weight follows the query, explained)', () => {
  const legs = [
    hit('lexical-only', { lexicalScore: 9, lexicalRank: 1 }),
    hit('vector-only', { lexicalScore: 0, similarity: 0.9, vectorRank: 1 }),
    hit('both', { lexicalScore: 8, lexicalRank: 2, similarity: 0.8, vectorRank: 2 }),
    hit('tail', { lexicalScore: 3, lexicalRank: 3, similarity: 0.5, vectorRank: 3 }),
  ];

  it('lets the lexical leg lead when its words matched the query, and meaning lead when they did not', () => {
    const wordsMatched = rank(legs, NOW, 'hybrid', HYBRID_FUSION.semanticWeightWhenWordsMatch);
    expect(ids(wordsMatched)).toEqual(['both', 'lexical-only', 'vector-only', 'tail']);
    const meaningLeads = rank(legs, NOW, 'hybrid', HYBRID_FUSION.semanticWeightOtherwise);
    expect(ids(meaningLeads)).toEqual(['vector-only', 'both', 'lexical-only', 'tail']);
  });

  it('explains the fused score: each leg min-max normalised over the items it found, weighted', () => {
    const ranked = rank(legs, NOW, 'hybrid', 0.4);
    // "both": lexical (8 − 3) / (9 − 3), similarity (0.8 − 0.5) / (0.9 − 0.5) = 0.75.
    const both = ranked.find((r) => r.recordId === 'both')?.rank;
    expect(both).toMatchObject({ mode: 'hybrid', lexicalRank: 2, vectorRank: 2, similarity: 0.8, semanticWeight: 0.4 });
    expect(both?.fused).toBeCloseTo(0.4 * 0.75 + 0.6 * (5 / 6), 6);
    // A leg that did not find an item gives it nothing; a lone hit of a leg is that leg's best.
    const [only] = rank([hit('v', { lexicalScore: 0, similarity: 0.42, vectorRank: 3 })], NOW, 'hybrid', 0.9);
    expect(only?.rank.lexicalRank).toBeUndefined();
    expect(only?.rank).toMatchObject({ lexical: 0, vectorRank: 3, similarity: 0.42, fused: 0.9 });
  });

  it('weights by how much of the query the best keyword hit holds: more than a quarter of its terms', () => {
    expect(semanticWeightFor('When did Caroline go to the support group?', 'Caroline: I went to a LGBTQ support group yesterday')).toBe(0.4);
    expect(semanticWeightFor('how should we reach the client?', 'Customer 42 prefers email over phone calls')).toBe(0.9);
    expect(semanticWeightFor('anything at all', undefined)).toBe(0.9);
  });

  it('ranks a semantic search by similarity, whatever the lexical scores', () => {
    const ranked = rank([hit('near', { lexicalScore: 0, similarity: 0.8, vectorRank: 1 }), hit('far', { lexicalScore: 9, similarity: 0.3, vectorRank: 2 })], NOW, 'semantic');
    expect(ids(ranked)).toEqual(['near', 'far']);
    expect(ranked[0]?.rank.score).toBeCloseTo(RANK_WEIGHTS.lexical * 0.8 + RANK_WEIGHTS.confidence * 0.5 + RANK_WEIGHTS.recency * Math.pow(0.5, 1 / RECENCY_HALF_LIFE_DAYS), 5);
  });

  it('reports no fusion for a semantic search', () => {
    const [only] = rank([hit('v', { lexicalScore: 0, similarity: 0.7, vectorRank: 1 })], NOW, 'semantic');
    expect(only?.rank).toMatchObject({ mode: 'semantic', vectorRank: 1, similarity: 0.7 });
    expect(only?.rank.fused).toBeUndefined();
    expect(only?.rank.semanticWeight).toBeUndefined();
  });

  it('keeps the lexical explanation unchanged in lexical mode', () => {
    const [only] = rank([hit('x', { lexicalRank: 1, vectorRank: 1, similarity: 0.9 })], NOW);
    expect(Object.keys(only?.rank ?? {}).sort()).toEqual(['confidence', 'lexical', 'recency', 'score']);
  });
});

describe('query coverage (the share of the query\'s terms a text holds)', () => {
  it('compares words, less function words, with plural and tense endings cut', () => {
    expect([...termsOf('What did the painters paint in the notes?')]).toEqual(['painter', 'paint', 'note']);
    expect(queryCoverage('painted notes', 'She paints a note')).toBe(1);
    expect(queryCoverage('Caroline support group adoption', 'Caroline went to a support group')).toBe(0.75);
  });

  it('is 0 for a query of function words only, or a text that shares none', () => {
    expect(queryCoverage('what is it?', 'what is it')).toBe(0);
    expect(queryCoverage('volcanic basalt', 'customer prefers email')).toBe(0);
  });

  it('asks the lexical leg the query less its function words, or the query itself when nothing else is left', () => {
    expect(lexicalQueryText('What did Caroline research?')).toBe('Caroline research');
    expect(lexicalQueryText('When is the launch of "Maple"?')).toBe('launch Maple');
    expect(lexicalQueryText('who is it?')).toBe('who is it?');
    expect(lexicalQueryText('Müller, Straße')).toBe('Müller Straße');
  });

  it('reads letters of any script, case-insensitively', () => {
    expect(queryCoverage('Müller Straße', 'müller wohnt in der STRASSE straße')).toBe(1);
  });
});
