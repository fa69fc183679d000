/**
 * The real models behind the port (models.ts: all-MiniLM-L6-v2 by default, e5-small-v2; both
 * quantized, 384 dimensions) on ONNX Runtime's CPU provider, from the two files
 * infra/local/model.sh fetched (a Maven Central jar, sha256 pinned). Nothing here reaches the
 * network: a missing file is an error naming the command that fetches it. The model's prefix
 * for the text's use, then mean pooling over the attention mask and L2 normalisation, as both
 * models were trained to be used.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type { Tensor } from 'onnxruntime-node';
import { DEFAULT_MODEL_DIR, modelOfDir } from './models.ts';
import { normalize, type EmbeddingModel } from './port.ts';

export interface OnnxModelOptions {
  /** A directory holding the .onnx file and its tokenizer.json. */
  dir?: string;
  /** ONNX Runtime intra-op threads (default 1: an indexer instance is meant to take one core). */
  threads?: number;
}

interface TokenizerJson {
  truncation?: { max_length?: number } | null;
}

export async function loadOnnxEmbeddingModel(options: OnnxModelOptions = {}): Promise<EmbeddingModel> {
  const dir = options.dir ?? DEFAULT_MODEL_DIR;
  const spec = modelOfDir(dir);
  const DIMENSIONS = spec.dimensions;
  // Loaded here, not at import: the package's other users (the hashing double) need no native binding.
  const loaded = await import('onnxruntime-node');
  // Its CommonJS build arrives as `default` under some loaders (vitest) and as the module under others (tsx).
  const ort = (loaded as unknown as { default?: typeof loaded.default }).default ?? (loaded as unknown as typeof loaded.default);
  const tokenizerJson = JSON.parse(readFileSync(path.join(dir, spec.tokenizerFile), 'utf8')) as TokenizerJson;
  const tokenizer = new Tokenizer(tokenizerJson, {});
  // The packaging's own bound on tokens per text ([CLS] and [SEP] included).
  const maxTokens = tokenizerJson.truncation?.max_length ?? 128;
  const session = await ort.InferenceSession.create(path.join(dir, spec.onnxFile), {
    executionProviders: ['cpu'],
    intraOpNumThreads: options.threads ?? 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
  const sepId = tokenizer.token_to_id('[SEP]') ?? 102;
  const wantsTypeIds = session.inputNames.includes('token_type_ids');

  const encode = (text: string): number[] => {
    const ids = tokenizer.encode(text).ids;
    // Truncated at the model's bound, keeping the closing [SEP] the model expects.
    return ids.length <= maxTokens ? ids : [...ids.slice(0, maxTokens - 1), sepId];
  };

  /** One text, one run: no padding, so its attention mask is all ones. */
  const embedOne = async (text: string): Promise<Float32Array> => {
    const encoded = encode(text);
    const shape = [1, encoded.length];
    const feeds: Record<string, Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(encoded, (id) => BigInt(id)), shape),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(encoded.length).fill(1n), shape),
    };
    if (wantsTypeIds) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(encoded.length), shape);
    const output = await session.run(feeds);
    const hidden = output[session.outputNames[0] ?? 'last_hidden_state'];
    if (hidden === undefined) throw new Error('embedding model: the session returned no hidden states');
    const data = hidden.data as Float32Array;
    // The [CLS] token's state (position 0), or the mean over the tokens.
    if (spec.pooling === 'cls') return normalize(Float32Array.from(data.subarray(0, DIMENSIONS)));
    const v = new Float32Array(DIMENSIONS);
    for (let t = 0; t < encoded.length; t += 1) {
      for (let d = 0; d < DIMENSIONS; d += 1) v[d] = (v[d] ?? 0) + (data[t * DIMENSIONS + d] ?? 0);
    }
    for (let d = 0; d < DIMENSIONS; d += 1) v[d] = (v[d] ?? 0) / encoded.length;
    return normalize(v);
  };

  return {
    modelId: spec.id,
    dimensions: DIMENSIONS,
    minSimilarity: spec.minSimilarity,
    async embed(texts, use) {
      // One text per run: the model is dynamically quantized, so its activation scales are
      // taken over the whole input tensor and a text embedded beside others came out different
      // (cosine 0.98 to itself alone). A vector must be a function of its text only, for replay
      // to rebuild the same index. One at a time: 661 texts/s on one thread here, 1,012 in 32s.
      const out: Float32Array[] = [];
      const prefix = spec.prefixes[use];
      for (const text of texts) out.push(await embedOne(prefix + text));
      return out;
    },
    close: () => session.release(),
  };
}
