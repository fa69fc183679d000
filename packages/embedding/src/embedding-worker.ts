/**
 * The embedding model's own thread (threaded-model.ts). ONNX Runtime's `run` returns a promise
 * but computes on the calling thread: a record's 1–2 ms of inference would stall whatever else
 * that thread serves (the HTTP API, the pipeline's projections). Here it stalls nothing else.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { TextUse } from './port.ts';
import { loadOnnxEmbeddingModel, type OnnxModelOptions } from './onnx-model.ts';

export interface ThreadedModelOptions extends OnnxModelOptions {
  /**
   * Run the model thread at a lower scheduling priority (nice 10, Linux), so that on a busy
   * machine it takes the CPU the threads answering writes leave over: for the vector-indexer,
   * whose lag is allowed, not for a search waiting on its query's embedding.
   */
  background?: boolean;
}

export type ToEmbeddingWorker = { id: number; texts: string[]; use: TextUse };
export type FromEmbeddingWorker =
  | { kind: 'ready'; modelId: string; dimensions: number; minSimilarity: number; background: boolean }
  | { kind: 'failed'; message: string }
  | { kind: 'vectors'; id: number; vectors: Float32Array[] }
  | { kind: 'error'; id: number; message: string };

const port = parentPort;
if (port === null) throw new Error('embedding-worker.ts runs only as a worker thread');
const send = (message: FromEmbeddingWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);

/** The scheduling priority of a background model thread: it yields the CPU to the threads that answer writes. */
const BACKGROUND_NICE = 10;

/**
 * Lowers this thread's scheduling priority (Linux: a thread is a task with an id of its own,
 * named by /proc/thread-self, and setpriority takes that id). False where that is not possible.
 */
function lowerThisThreadsPriority(): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, BACKGROUND_NICE);
    return true;
  } catch {
    return false;
  }
}

/** A request being embedded: its texts are done one at a time, so that a query can go between them. */
interface Job {
  request: ToEmbeddingWorker;
  vectors: Float32Array[];
}

try {
  const options = workerData as ThreadedModelOptions;
  const background = options.background === true && lowerThisThreadsPriority();
  const model = await loadOnnxEmbeddingModel(options);
  // Queries first: someone waits on a query (a search, a deletion's replay probe), while
  // documents are the vector-indexer's, whose lag is allowed. Between two texts the thread
  // takes its messages, so a query waits for one text in progress (a few ms), never for an
  // indexing batch of thousands (seconds after a burst of writes; design §6.7).
  const queries: Job[] = [];
  const documents: Job[] = [];
  const queueOf = (request: ToEmbeddingWorker): Job[] => (request.use === 'query' ? queries : documents);
  let pumping = false;
  const pump = async (): Promise<void> => {
    const job = queries[0] ?? documents[0];
    if (job === undefined) {
      pumping = false;
      return;
    }
    const { request, vectors } = job;
    try {
      const [vector] = await model.embed([request.texts[vectors.length] ?? ''], request.use);
      if (vector === undefined) throw new Error('the model returned no vector');
      vectors.push(vector);
      if (vectors.length === request.texts.length) {
        queueOf(request).shift();
        send({ kind: 'vectors', id: request.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
      }
    } catch (err) {
      queueOf(request).shift();
      send({ kind: 'error', id: request.id, message: err instanceof Error ? err.message : String(err) });
    }
    // A macrotask turn: the messages that arrived meanwhile are queued before the next text.
    setImmediate(() => void pump());
  };
  port.on('message', (request: ToEmbeddingWorker) => {
    if (request.texts.length === 0) {
      send({ kind: 'vectors', id: request.id, vectors: [] });
      return;
    }
    queueOf(request).push({ request, vectors: [] });
    if (!pumping) {
      pumping = true;
      void pump();
    }
  });
  send({ kind: 'ready', modelId: model.modelId, dimensions: model.dimensions, minSimilarity: model.minSimilarity, background });
} catch (err) {
  send({ kind: 'failed', message: err instanceof Error ? err.message : String(err) });
}
