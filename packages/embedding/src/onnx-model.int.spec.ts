/**
 * The real model (quantized all-MiniLM-L6-v2 on ONNX Runtime's CPU provider, from the files
 * scripts/setup.sh fetched): the port's contract, and what it is for — a paraphrase in other
 * words is near, an unrelated sentence is not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testEmbeddingModel } from '@gm/testing';
import { cosine } from './port.ts';
import { MODEL_ID, loadOnnxEmbeddingModel } from './onnx-model.ts';

testEmbeddingModel('all-MiniLM-L6-v2 (quantized, ONNX Runtime CPU)', () => loadOnnxEmbeddingModel());

describe('the ONNX embedding model', () => {
  it('finds a paraphrase that shares no content word near, and an unrelated sentence far', async () => {
    const model = await loadOnnxEmbeddingModel();
    try {
      expect(model.modelId).toBe(MODEL_ID);
      expect(model.dimensions).toBe(384);
      const [fact, paraphrase, unrelated] = await model.embed([
        'Customer 42 prefers email over phone calls',
        'the client would rather be contacted by e-mail',
        'The quarterly revenue grew by eight percent',
      ]);
      const near = cosine(fact as Float32Array, paraphrase as Float32Array);
      const far = cosine(fact as Float32Array, unrelated as Float32Array);
      expect(near).toBeGreaterThan(0.4);
      expect(near).toBeGreaterThan(far + 0.3);
    } finally {
      await model.close();
    }
  });

  it('refuses to start without its files, naming the command that fetches them (it never downloads)', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'gm-model-'));
    try {
      await expect(loadOnnxEmbeddingModel({ dir: empty })).rejects.toThrow(/all-minilm-l6-v2-q\.onnx is missing; run `bash infra\/local\/model\.sh fetch`/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
