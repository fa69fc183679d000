import { describe, expect, it } from 'vitest';
import { generate } from './generator.ts';
import { checkpointsOf, countCheckpoints } from './govbench.ts';
import { ATTACK_KINDS, DOMAINS } from './model.ts';

describe('govbench scenario generator', () => {
  it('is deterministic: the same seed gives the same episodes, another seed other ones', () => {
    const a = JSON.stringify(generate({ seed: 42, episodesPerDomain: 2, stepMs: 60_000 }));
    expect(JSON.stringify(generate({ seed: 42, episodesPerDomain: 2, stepMs: 60_000 }))).toBe(a);
    expect(JSON.stringify(generate({ seed: 43, episodesPerDomain: 2, stepMs: 60_000 }))).not.toBe(a);
  });

  it('produces at least 2,000 checkpoints by default, every attack kind in every domain', () => {
    const episodes = generate({ seed: 1, episodesPerDomain: 6, stepMs: 60_000 });
    const counts = countCheckpoints(episodes);
    expect(counts.total).toBeGreaterThanOrEqual(2_000);
    expect(Object.keys(counts.perCategory).sort()).toEqual(['access', 'forgetting', 'utility']);
    for (const domain of DOMAINS) {
      const kinds = new Set(checkpointsOf(episodes).filter((c) => c.domain === domain).map((c) => c.kind));
      expect([...ATTACK_KINDS].filter((k) => !kinds.has(k)), domain).toEqual([]);
    }
  });

  it('gives every probe something to catch: leak targets, an expected denial or a superseded mark, unique record ids per episode', () => {
    for (const episode of generate({ seed: 7, episodesPerDomain: 1, stepMs: 60_000 })) {
      const ids = episode.steps.flatMap((s) => (s.type === 'write' ? [s.memory.id] : []));
      expect(new Set(ids).size).toBe(ids.length);
      for (const c of checkpointsOf([episode]).filter((cp) => cp.category !== 'utility')) {
        expect(c.leakTargets.length > 0 || c.expected.outcome === 'denied' || c.expected.outcome === 'superseded', c.id).toBe(true);
      }
    }
  });
});
