/** What a text is embedded as: asymmetric models are trained with a prefix for each. */
export type TextUse = 'query' | 'document';

/**
 * The embedding port (§6.7): texts in, unit vectors out, from a model that is named and
 * sized, so that vectors of one model are never compared with another's.
 */
export interface EmbeddingModel {
  /** Names the model and its packaging: vectors are comparable only under the same id. */
  readonly modelId: string;
  readonly dimensions: number;
  /** The least cosine similarity at which a nearest neighbour counts as found, for this model (models.ts). */
  readonly minSimilarity: number;
  /**
   * One L2-normalised vector per text, in input order; [] for []. `use` says what the texts are:
   * a record's content is a `document`, a search (or a probe searching like one) a `query`.
   */
  embed(texts: readonly string[], use: TextUse): Promise<Float32Array[]>;
  close(): Promise<void>;
}

/** Cosine similarity of two unit vectors (their dot product). */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`cannot compare vectors of ${a.length} and ${b.length} dimensions`);
  let dot = 0;
  for (let i = 0; i < a.length; i += 1) dot += (a[i] ?? 0) * (b[i] ?? 0);
  return dot;
}

/** Scales a vector to unit length in place (a zero vector stays zero). */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i += 1) v[i] = (v[i] ?? 0) / norm;
  return v;
}
