/**
 * The embedding model's own thread (threaded-model.ts). ONNX Runtime's `run` returns a promise
 * but computes on the calling thread: a record's 1–2 ms of inference would stall whatever else
 * that thread serves (the HTTP API, the pipeline's projections). Here it stalls nothing else.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadOnnxEmbeddingModel, type OnnxModelOptions } from './onnx-model.ts';

export type ToEmbeddingWorker = { id: number; texts: string[] };
export type FromEmbeddingWorker =
  | { kind: 'ready'; modelId: string; dimensions: number }
  | { kind: 'failed'; message: string }
  | { kind: 'vectors'; id: number; vectors: Float32Array[] }
  | { kind: 'error'; id: number; message: string };

const port = parentPort;
if (port === null) throw new Error('embedding-worker.ts runs only as a worker thread');
const send = (message: FromEmbeddingWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);

try {
  const model = await loadOnnxEmbeddingModel(workerData as OnnxModelOptions);
  port.on('message', (request: ToEmbeddingWorker) => {
    model.embed(request.texts).then(
      (vectors) => send({ kind: 'vectors', id: request.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer)),
      (err: unknown) => send({ kind: 'error', id: request.id, message: err instanceof Error ? err.message : String(err) }),
    );
  });
  send({ kind: 'ready', modelId: model.modelId, dimensions: model.dimensions });
} catch (err) {
  send({ kind: 'failed', message: err instanceof Error ? err.message : String(err) });
}
