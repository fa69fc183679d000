/**
 * The real models (quantized all-MiniLM-L6-v2, the default, and e5-small-v2 on ONNX Runtime's
 * CPU provider, from the files scripts/setup.sh fetched): the port's contract, and what each is
 * for — a paraphrase in other words is near, an unrelated sentence is not, on either side of the
 * model's own similarity floor.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os, { getPriority } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testEmbeddingModel } from '@gm/testing';
import { cosine } from './port.ts';
import { DEFAULT_MODEL, MODELS, modelDirOf, modelOfDir } from './models.ts';
import { loadOnnxEmbeddingModel } from './onnx-model.ts';
import { loadThreadedOnnxEmbeddingModel } from './threaded-model.ts';

for (const spec of Object.values(MODELS)) {
  testEmbeddingModel(`${spec.name} (quantized, ONNX Runtime CPU)`, () => loadOnnxEmbeddingModel({ dir: modelDirOf(spec) }));
}
testEmbeddingModel(`${DEFAULT_MODEL.name} in a thread of its own`, () => loadThreadedOnnxEmbeddingModel());

describe('the ONNX embedding model', () => {
  it('in its own thread, leaves the caller\'s thread free while it embeds (ONNX Runtime computes on the calling thread)', async () => {
    const model = await loadThreadedOnnxEmbeddingModel();
    try {
      const texts = Array.from({ length: 200 }, (_, i) => `Record ${i}: the customer prefers email over phone calls and wants monthly invoices`);
      // Counted while the embeddings are computed: on the caller's thread, a timer could fire only between texts.
      let ticks = 0;
      let done = false;
      const counting = (async () => {
        while (!done) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          ticks += 1;
        }
      })();
      const vectors = await model.embed(texts, 'document');
      done = true;
      await counting;
      expect(vectors).toHaveLength(200);
      expect(ticks).toBeGreaterThan(10 * texts.length);
      // The same vectors as the model on this thread gives.
      const local = await loadOnnxEmbeddingModel();
      const [again] = await local.embed([texts[7] ?? ''], 'document');
      await local.close();
      expect(cosine(again as Float32Array, vectors[7] as Float32Array)).toBeCloseTo(1, 6);
    } finally {
      await model.close();
    }
  });

  it('in its own thread, answers a query before the indexing requests queued ahead of it, not after them', async () => {
    const model = await loadThreadedOnnxEmbeddingModel();
    try {
      const texts = Array.from({ length: 60 }, (_, i) => `Record ${i}: the customer prefers email over phone calls and wants monthly invoices`);
      // The vector-indexer's way: many requests of documents, all sent before the query.
      let documentsDone = 0;
      const indexing = texts.map((text) => model.embed([text], 'document').then(([vector]) => {
        documentsDone += 1;
        return vector;
      }));
      let documentsDoneBeforeQuery = -1;
      const [asked] = await model.embed(['which contact channel does the customer prefer'], 'query').then((vectors) => {
        documentsDoneBeforeQuery = documentsDone;
        return vectors;
      });
      const documents = await Promise.all(indexing);
      // At most the text in progress when the query came, and the ones its message overtook.
      expect(documentsDoneBeforeQuery).toBeLessThan(5);
      expect(documents).toHaveLength(60);
      // Going first changes no vector: each is its text's alone.
      const local = await loadOnnxEmbeddingModel();
      const [alone] = await local.embed(['which contact channel does the customer prefer'], 'query');
      const [last] = await local.embed([texts[59] ?? ''], 'document');
      await local.close();
      expect(cosine(alone as Float32Array, asked as Float32Array)).toBeCloseTo(1, 6);
      expect(cosine(last as Float32Array, documents[59] as Float32Array)).toBeCloseTo(1, 6);
    } finally {
      await model.close();
    }
  });

  it('in the background its thread runs at nice 10, on idle cores only at SCHED_IDLE, and the caller\'s thread stays as it was (Linux)', async () => {
    /** Each thread's nice (field 19) and policy (field 41), counted after the command name, which may hold spaces. */
    const threads = (): Array<{ nice: number; policy: number }> => readdirSync('/proc/self/task').map((tid) => {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { nice: Number(fields[16]), policy: Number(fields[38]) };
    });
    const SCHED_IDLE = 5;
    const count = (nice: number, policy: number) => threads().filter((t) => t.nice === nice && t.policy === policy).length;
    const [niced, idled] = [count(10, 0), count(10, SCHED_IDLE)];
    const background = await loadThreadedOnnxEmbeddingModel({ priority: 'background' });
    const idle = await loadThreadedOnnxEmbeddingModel({ priority: 'idle' });
    const normal = await loadThreadedOnnxEmbeddingModel();
    try {
      expect([background.priority, idle.priority, normal.priority]).toEqual(['background', 'idle', 'normal']);
      // One more thread at nice 10 under the normal policy, the background model's; one more
      // at SCHED_IDLE, the idle model's; this one stays where it was.
      expect(count(10, 0)).toBe(niced + 1);
      expect(count(10, SCHED_IDLE)).toBe(idled + 1);
      expect(getPriority()).toBe(0);
      // They still embed, the same vectors.
      const [a] = await background.embed(['the customer prefers email'], 'query');
      const [b] = await idle.embed(['the customer prefers email'], 'query');
      const [c] = await normal.embed(['the customer prefers email'], 'query');
      expect(cosine(a as Float32Array, c as Float32Array)).toBeCloseTo(1, 6);
      expect(cosine(b as Float32Array, c as Float32Array)).toBeCloseTo(1, 6);
    } finally {
      await Promise.all([background.close(), idle.close(), normal.close()]);
    }
  });

  for (const spec of Object.values(MODELS)) {
    it(`${spec.name}: finds a paraphrase that shares no content word above its floor, and an unrelated question below it`, async () => {
      const model = await loadOnnxEmbeddingModel({ dir: modelDirOf(spec) });
      try {
        expect(model.modelId).toBe(spec.id);
        expect(model.dimensions).toBe(384);
        expect(model.minSimilarity).toBe(spec.minSimilarity);
        const [fact] = await model.embed(['Customer 42 prefers email over phone calls'], 'document');
        const [paraphrase, unrelated] = await model.embed(['the client would rather be contacted by e-mail', 'volcanic basalt geology of Iceland'], 'query');
        const near = cosine(fact as Float32Array, paraphrase as Float32Array);
        const far = cosine(fact as Float32Array, unrelated as Float32Array);
        expect(near).toBeGreaterThanOrEqual(model.minSimilarity);
        expect(far).toBeLessThan(model.minSimilarity);
      } finally {
        await model.close();
      }
    });
  }

  for (const spec of Object.values(MODELS).filter((m) => m.prefixes.query !== m.prefixes.document)) {
    it(`${spec.name}: embeds a query and a document of the same words apart, as the model is asymmetric ("${spec.prefixes.query.trim()}")`, async () => {
      const model = await loadOnnxEmbeddingModel({ dir: modelDirOf(spec) });
      try {
        expect(model.modelId).toBe(spec.id);
        const [asDocument] = await model.embed(['the customer prefers email'], 'document');
        const [asQuery] = await model.embed(['the customer prefers email'], 'query');
        const similarity = cosine(asDocument as Float32Array, asQuery as Float32Array);
        expect(similarity).toBeLessThan(0.999);
        expect(similarity).toBeGreaterThan(model.minSimilarity);
      } finally {
        await model.close();
      }
    });
  }

  it('refuses to start without its files, naming the command that fetches them (it never downloads)', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'gm-model-'));
    try {
      await expect(loadOnnxEmbeddingModel({ dir: empty })).rejects.toThrow(/holds no model \(looked for e5-small-v2-q\.onnx.*run `bash infra\/local\/model\.sh fetch`/);
      await expect(loadThreadedOnnxEmbeddingModel({ dir: empty })).rejects.toThrow(/holds no model/);
      // Each directory of the cache is known by its files.
      for (const spec of Object.values(MODELS)) expect(modelOfDir(modelDirOf(spec)).id).toBe(spec.id);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
