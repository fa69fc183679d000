import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddingModel } from '@gm/embedding';

/**
 * What every embedding model behind the port must do (§6.7): the real ONNX model and the
 * hashing double of the unit specs alike. Meaning is not part of the contract (the double has
 * none); the real model's semantic specs sit beside its adapter.
 */
export function testEmbeddingModel(name: string, open: () => Promise<EmbeddingModel>): void {
  describe(`embedding model contract: ${name}`, () => {
    let model: EmbeddingModel;
    beforeAll(async () => {
      model = await open();
    });
    afterAll(async () => {
      await model?.close();
    });

    const norm = (v: Float32Array) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
    // Computed here, not imported: importing @gm/embedding's values would load ONNX Runtime into every spec.
    const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * (b[i] ?? 0), 0);

    it('names itself and gives one unit vector of its declared size per text, in input order', async () => {
      expect(model.modelId).toMatch(/\S/);
      const texts = ['Customer 42 prefers email over phone calls', 'The harbor delivery invoice is overdue', 'Quarterly revenue grew by eight percent'];
      const vectors = await model.embed(texts, 'document');
      expect(vectors).toHaveLength(texts.length);
      for (const v of vectors) {
        expect(v).toBeInstanceOf(Float32Array);
        expect(v).toHaveLength(model.dimensions);
        expect(v.every(Number.isFinite)).toBe(true);
        expect(norm(v)).toBeCloseTo(1, 5);
      }
      const alone = await Promise.all(texts.map(async (t) => (await model.embed([t], 'document'))[0]));
      vectors.forEach((v, i) => expect(cosine(v, alone[i] as Float32Array)).toBeCloseTo(1, 5));
    });

    it('is a function of the text alone: the same text gives the same vector, in any batch, on any call', async () => {
      const [first] = await model.embed(['Invoice 7 was paid by bank transfer'], 'document');
      const [, again] = await model.embed(['Something else entirely, and longer than the other text by far', 'Invoice 7 was paid by bank transfer'], 'document');
      expect(Array.from(again as Float32Array)).toEqual(Array.from(first as Float32Array));
    });

    it('answers [] for no texts, and a vector of its size for an empty or a very long text', async () => {
      expect(await model.embed([], 'document')).toEqual([]);
      const [empty, long] = await model.embed(['', 'harbor '.repeat(5_000)], 'document');
      expect(empty).toHaveLength(model.dimensions);
      expect(long).toHaveLength(model.dimensions);
      expect((long as Float32Array).every(Number.isFinite)).toBe(true);
    });

    it('puts texts that share their words nearer than texts that share none', async () => {
      const [query] = await model.embed(['the harbor delivery invoice'], 'query');
      const [b, c] = await model.embed(['invoice for the harbor delivery', 'quarterly revenue grew by eight percent'], 'document');
      // Near enough to be found past the model's own floor, and nearer than the unrelated text
      // (how far below the floor that one falls is each model's own spread: its spec tests it).
      const near = cosine(query as Float32Array, b as Float32Array);
      expect(near).toBeGreaterThanOrEqual(model.minSimilarity);
      expect(near).toBeGreaterThan(cosine(query as Float32Array, c as Float32Array) + 0.05);
    });
  });
}
