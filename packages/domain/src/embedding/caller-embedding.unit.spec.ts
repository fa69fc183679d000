import { describe, expect, it } from 'vitest';
import { acceptCallerEmbedding, unitVector } from './caller-embedding.ts';

const MODEL = { modelId: 'm@1', dimensions: 3 };

describe('a caller\'s own embedding (§6.7)', () => {
  it('is accepted only from the runtime\'s model at its dimensions, and normalised', () => {
    expect(acceptCallerEmbedding({ model: 'm@1', vector: [3, 0, 4] }, MODEL)).toEqual([0.6, 0, 0.8]);
    expect(() => acceptCallerEmbedding({ model: 'other@1', vector: [3, 0, 4] }, MODEL)).toThrow(/model "m@1" with 3 dimensions \(got "other@1", 3\)/);
    expect(() => acceptCallerEmbedding({ model: 'm@1', vector: [3, 4] }, MODEL)).toThrow(/got "m@1", 2/);
    expect(() => acceptCallerEmbedding({ model: 'm@1', vector: [0, 0, 0] }, MODEL)).toThrow(/zero vector/);
  });

  it('is refused where the runtime keeps no vectors', () => {
    expect(() => acceptCallerEmbedding({ model: 'm@1', vector: [1, 0, 0] }, undefined)).toThrow(/MEMORY_SEMANTIC=off/);
  });

  it('normalises vectors whose squares would overflow or underflow, instead of calling them zero', () => {
    const [a, b] = unitVector([1e155, 1e155]) ?? [];
    expect(a).toBeCloseTo(Math.SQRT1_2, 12);
    expect(b).toBeCloseTo(Math.SQRT1_2, 12);
    const [c, d] = unitVector([3e-170, 4e-170]) ?? [];
    expect(c).toBeCloseTo(0.6, 12);
    expect(d).toBeCloseTo(0.8, 12);
    expect(unitVector([0, 0])).toBeUndefined();
  });
});
