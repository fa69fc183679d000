/**
 * A deterministic stand-in for unit specs only (the contract suite runs the real model too):
 * each lower-cased word is hashed into one of `dimensions` buckets, so texts that share words
 * are near and texts that do not are orthogonal. It knows nothing of meaning: a paraphrase
 * with other words is not near, which is exactly what the real model is for.
 */
import { createHash } from 'node:crypto';
import { normalize, type EmbeddingModel, type TextUse } from './port.ts';

export class HashingEmbeddingModel implements EmbeddingModel {
  readonly modelId: string;
  /** Texts that share a word are near: any shared word counts. */
  readonly minSimilarity = 0.01;

  constructor(readonly dimensions = 384) {
    this.modelId = `test-hashing-${dimensions}`;
  }

  /** Both uses alike: the double is symmetric. */
  async embed(texts: readonly string[], _use: TextUse): Promise<Float32Array[]> {
    return texts.map((text) => {
      const v = new Float32Array(this.dimensions);
      for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
        const bucket = createHash('sha256').update(word).digest().readUInt32BE(0) % this.dimensions;
        v[bucket] = (v[bucket] ?? 0) + 1;
      }
      return normalize(v);
    });
  }

  async close(): Promise<void> {}
}
