/**
 * A caller's own embedding (§6.7), of a query or of a write's content: accepted only from the
 * model the runtime embeds with, compared by its id and dimensions, and normalised as the
 * runtime's own vectors are (cosine similarity is their dot product). Anything else is a 422:
 * vectors of another model, or of another size, mean nothing beside the index's, and a write or
 * a search that carried them would be silently reinterpreted.
 */
import { GovernedMemoryError, type CallerEmbedding } from '@gm/contracts';

/** The runtime's model as a caller's embedding is checked against: absent where no vectors are kept. */
export interface EmbeddingTarget {
  modelId: string;
  dimensions: number;
}

/** The caller's vector, unit length; MEM_VALIDATION naming what is wrong otherwise. */
export function acceptCallerEmbedding(embedding: CallerEmbedding, model: EmbeddingTarget | undefined): number[] {
  if (model === undefined) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'embedding: this runtime keeps no vectors (MEMORY_SEMANTIC=off); send the content alone');
  }
  const { model: modelId, vector } = embedding;
  if (modelId !== model.modelId || vector.length !== model.dimensions) {
    throw new GovernedMemoryError(
      'MEM_VALIDATION', `embedding: this runtime compares only vectors of model "${model.modelId}" with ${model.dimensions} dimensions (got "${modelId}", ${vector.length})`,
    );
  }
  const unit = unitVector(vector);
  if (unit === undefined) throw new GovernedMemoryError('MEM_VALIDATION', 'embedding: a zero vector has no direction');
  return unit;
}

/**
 * The vector scaled to unit length, or undefined for a zero vector (or one that is not finite).
 * Scaled by its largest magnitude first, so that neither 1e155s (whose squares overflow) nor
 * 1e-170s (whose squares underflow) pass for zero.
 */
export function unitVector(vector: readonly number[]): number[] | undefined {
  const scale = vector.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
  if (!(scale > 0) || !Number.isFinite(scale)) return undefined;
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + (x / scale) ** 2, 0)) * scale;
  return norm > 0 && Number.isFinite(norm) ? vector.map((x) => x / norm) : undefined;
}
