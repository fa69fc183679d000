import type { EmbeddingModel } from '@gm/embedding';

/**
 * The model, asked once per (text, use) for the life of this wrapper: one replay. A call with
 * several texts asks the model for the ones not asked yet in one request, and each text's
 * vector is then kept for the calls of one text that follow.
 */
export function embeddingOnce(model: EmbeddingModel): EmbeddingModel {
  const asked = new Map<string, Promise<Float32Array>>();
  const keyOf = (use: string, text: string) => `${use}\u0000${text}`;
  return {
    modelId: model.modelId,
    dimensions: model.dimensions,
    minSimilarity: model.minSimilarity,
    close: () => model.close(),
    embed: async (texts, use) => {
      const missing = [...new Set(texts.filter((text) => !asked.has(keyOf(use, text))))];
      if (missing.length > 0) {
        const vectors = model.embed(missing, use);
        missing.forEach((text, i) => {
          const vector = vectors.then((all) => {
            const v = all[i];
            if (v === undefined) throw new Error('the model returned fewer vectors than texts');
            return v;
          });
          // Failures surface at the calls that await them, not as unhandled rejections.
          vector.catch(() => undefined);
          asked.set(keyOf(use, text), vector);
        });
      }
      return Promise.all(texts.map((text) => asked.get(keyOf(use, text)) as Promise<Float32Array>));
    },
  };
}
