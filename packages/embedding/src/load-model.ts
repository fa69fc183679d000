/**
 * The one way a runtime loads the model it embeds with: the services' composition roots and the
 * embedded app. The model runs in a thread of its own (threaded-model.ts), so inference never
 * stalls the thread that asked for it.
 */
import { DEFAULT_MODEL_DIR } from './models.ts';
import { loadThreadedOnnxEmbeddingModel, sharedOnnxEmbeddingModel, type ModelPriority, type ThreadedEmbeddingModel } from './threaded-model.ts';

export interface LoadEmbeddingModelOptions {
  /** How the model's thread is scheduled (ModelPriority); `normal` when not given. */
  priority?: ModelPriority;
  /**
   * One model thread per process (and priority), shared by every runtime the process starts: a
   * load takes about half a second and 150 MB. The model's `close` then does nothing.
   */
  shared?: boolean;
}

/** The model in `dir` (MEMORY_EMBEDDING_MODEL_DIR), or the default model's when it is not given. */
export function loadEmbeddingModel(dir: string | undefined, options: LoadEmbeddingModelOptions = {}): Promise<ThreadedEmbeddingModel> {
  const modelDir = dir ?? DEFAULT_MODEL_DIR;
  const priority = options.priority ?? 'normal';
  if (options.shared === true) return sharedOnnxEmbeddingModel(modelDir, { priority });
  return loadThreadedOnnxEmbeddingModel({ dir: modelDir, priority });
}
