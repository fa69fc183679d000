/**
 * The ONNX model in a worker thread of its own (embedding-worker.ts), behind the same port:
 * callers await vectors while their own thread goes on serving. The worker does not keep the
 * process alive while it is idle. If it dies, the calls in flight fail and the next call
 * starts a new one.
 */
import { Worker } from 'node:worker_threads';
import { typeScriptWorkerExecArgv } from '@gm/thread-lock';
import type { FromEmbeddingWorker, ModelPriority, ThreadedModelOptions, ToEmbeddingWorker } from './embedding-worker.ts';
import { DEFAULT_MODEL_DIR } from './models.ts';
import type { EmbeddingModel } from './port.ts';

interface Pending {
  resolve(vectors: Float32Array[]): void;
  reject(err: Error): void;
}

export type { ModelPriority, ThreadedModelOptions };

/** A threaded model, and the scheduling its thread did get (it may get less than it asked for). */
export type ThreadedEmbeddingModel = EmbeddingModel & { readonly priority: ModelPriority };

interface Running {
  worker: Worker;
  pending: Map<number, Pending>;
  modelId: string;
  dimensions: number;
  minSimilarity: number;
  priority: ModelPriority;
}

export async function loadThreadedOnnxEmbeddingModel(options: ThreadedModelOptions = {}): Promise<ThreadedEmbeddingModel> {
  let nextId = 0;
  let running: Promise<Running> | undefined;
  let closed = false;

  const start = (): Promise<Running> =>
    new Promise<Running>((resolve, reject) => {
      const worker = new Worker(new URL('./embedding-worker.ts', import.meta.url), { workerData: options, execArgv: typeScriptWorkerExecArgv() });
      const pending = new Map<number, Pending>();
      const failAll = (err: Error) => {
        for (const p of pending.values()) p.reject(err);
        pending.clear();
      };
      worker.on('message', (message: FromEmbeddingWorker) => {
        if (message.kind === 'ready') resolve({ worker, pending, modelId: message.modelId, dimensions: message.dimensions, minSimilarity: message.minSimilarity, priority: message.priority });
        else if (message.kind === 'failed') reject(new Error(message.message));
        else {
          const p = pending.get(message.id);
          pending.delete(message.id);
          if (pending.size === 0) worker.unref();
          if (message.kind === 'vectors') p?.resolve(message.vectors);
          else p?.reject(new Error(`embedding model: ${message.message}`));
        }
      });
      worker.on('error', (err) => {
        reject(err);
        failAll(err);
      });
      worker.on('exit', (code) => {
        running = undefined;
        failAll(new Error(`embedding model: its thread exited (${code})`));
      });
    });

  // Started once here, so that a missing model fails the load, as the in-thread model's does.
  const first = await (running = start());
  first.worker.unref();

  return {
    modelId: first.modelId,
    dimensions: first.dimensions,
    minSimilarity: first.minSimilarity,
    priority: first.priority,
    async embed(texts, use) {
      if (closed) throw new Error('embedding model: closed');
      if (texts.length === 0) return [];
      const { worker, pending } = await (running ??= start());
      const id = nextId++;
      const result = new Promise<Float32Array[]>((resolve, reject) => pending.set(id, { resolve, reject }));
      worker.ref();
      const request: ToEmbeddingWorker = { id, texts: [...texts], use };
      worker.postMessage(request);
      return result;
    },
    async close() {
      closed = true;
      const current = running;
      running = undefined;
      if (current !== undefined) await (await current).worker.terminate();
    },
  };
}

const shared = new Map<string, Promise<ThreadedEmbeddingModel>>();

/**
 * The model of `dir` in a thread of its own, started once per thread (and priority) and shared
 * by every user in it (runtimes started one after another in one process): a load takes about
 * half a second and 150 MB. Its `close` does nothing; the model thread lives, idle and
 * unreferenced, as long as this one. A failed load is not kept, so the next call tries again.
 */
export function sharedOnnxEmbeddingModel(dir: string = DEFAULT_MODEL_DIR, options: { priority?: ModelPriority } = {}): Promise<ThreadedEmbeddingModel> {
  const priority = options.priority ?? 'normal';
  const key = `${priority}\u0000${dir}`;
  let model = shared.get(key);
  if (model === undefined) {
    model = loadThreadedOnnxEmbeddingModel({ dir, priority }).then((loaded) => ({ ...loaded, close: async () => undefined }));
    shared.set(key, model);
    model.catch(() => shared.delete(key));
  }
  return model;
}
