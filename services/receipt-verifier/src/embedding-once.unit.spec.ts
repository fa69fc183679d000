import { describe, expect, it } from 'vitest';
import { HashingEmbeddingModel, type EmbeddingModel } from '@gm/embedding';
import { embeddingOnce } from './embedding-once.ts';

/** The deterministic double, counting what it is asked. */
function counting(): { model: EmbeddingModel; requests: string[][] } {
  const inner = new HashingEmbeddingModel();
  const requests: string[][] = [];
  return {
    requests,
    model: {
      modelId: inner.modelId, dimensions: inner.dimensions, minSimilarity: inner.minSimilarity, close: () => inner.close(),
      embed: async (texts, use) => {
        requests.push([...texts]);
        return inner.embed(texts, use);
      },
    },
  };
}

describe('embeddingOnce (one replay\'s model)', () => {
  it('asks for every probe text in one request, then answers each text\'s own call from it', async () => {
    const { model, requests } = counting();
    const once = embeddingOnce(model);
    const [a, b] = await once.embed(['exact phrase', 'terms reordered', 'exact phrase'], 'query');
    expect(requests).toEqual([['exact phrase', 'terms reordered']]);
    const [again] = await once.embed(['terms reordered'], 'query');
    expect(again).toBe(b);
    expect(requests).toHaveLength(1);
    // The same vectors the model gives each text alone; a document is another request.
    const [alone] = await model.embed(['exact phrase'], 'query');
    expect(Array.from(a as Float32Array)).toEqual(Array.from(alone as Float32Array));
    await once.embed(['exact phrase'], 'document');
    expect(requests.at(-1)).toEqual(['exact phrase']);
  });

  it('fails each text\'s call when the request fails, without an unhandled rejection', async () => {
    const { model } = counting();
    const once = embeddingOnce({ ...model, embed: async () => { throw new Error('model thread exited'); } });
    const batch = once.embed(['one', 'two'], 'query');
    await expect(batch).rejects.toThrow('model thread exited');
    await expect(once.embed(['two'], 'query')).rejects.toThrow('model thread exited');
  });
});
