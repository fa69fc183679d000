/**
 * The embedding model's own thread (threaded-model.ts). ONNX Runtime's `run` returns a promise
 * but computes on the calling thread: a record's 1–2 ms of inference would stall whatever else
 * that thread serves (the HTTP API, the pipeline's projections). Here it stalls nothing else.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { TextUse } from './port.ts';
import { loadOnnxEmbeddingModel, type OnnxModelOptions } from './onnx-model.ts';

/**
 * How the model's thread is scheduled (Linux; elsewhere always `normal`):
 * - `normal`: as the caller's threads — for a search waiting on its query's embedding.
 * - `background`: nice 10, so on a busy machine it takes the CPU the threads answering writes
 *   leave over — for a vector-indexer, whose lag is allowed.
 * - `idle`: SCHED_IDLE, runs only on a core nothing else wants, and gives it up the moment a
 *   thread answering a write wakes. Nice 10 still took the core first at every wake-up of the
 *   write path's threads, which hand each write along (the embedded runtime's API and pipeline
 *   threads, docs/pipeline.md); a process whose only work is the model would stall its
 *   batches past the session timeout under a saturated machine, so the vector-indexer stays
 *   `background`.
 */
export type ModelPriority = 'normal' | 'background' | 'idle';

export interface ThreadedModelOptions extends OnnxModelOptions {
  /** The model thread's scheduling (ModelPriority); `normal` when not given. */
  priority?: ModelPriority;
}

export type ToEmbeddingWorker = { id: number; texts: string[]; use: TextUse };
export type FromEmbeddingWorker =
  | { kind: 'ready'; modelId: string; dimensions: number; minSimilarity: number; priority: ModelPriority }
  | { kind: 'failed'; message: string }
  | { kind: 'vectors'; id: number; vectors: Float32Array[] }
  | { kind: 'error'; id: number; message: string };

const port = parentPort;
if (port === null) throw new Error('embedding-worker.ts runs only as a worker thread');
const send = (message: FromEmbeddingWorker, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);

/** The nice value of a `background` model thread: it yields the CPU to the threads that answer writes. */
const BACKGROUND_NICE = 10;
/** SCHED_IDLE's number in the thread's stat (field 41, `policy`; sched(7)). */
const SCHED_IDLE = 5;

/** This thread's id (Linux: a thread is a task with an id of its own, named by /proc/thread-self). */
function thisThreadsId(): number | undefined {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

/** The scheduling policy of a thread of this process, as its stat reads back (undefined when unreadable). */
function policyOf(tid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // Fields counted after the command name, which may hold spaces: policy is field 41.
    const policy = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
    return Number.isInteger(policy) ? policy : undefined;
  } catch {
    return undefined;
  }
}

/** util-linux's chrt where distributions install it, by absolute path: never whatever `chrt` the PATH names first. */
const CHRT_PATHS = ['/usr/bin/chrt', '/bin/chrt'];

/**
 * Lowers this thread's scheduling as far as `wanted` asks, and answers what it got. Node has no
 * sched_setscheduler, so SCHED_IDLE goes through util-linux's `chrt` (any user may move their own
 * thread there), judged by the thread's stat read back; where that is not possible it stays nice 10.
 */
function lowerThisThreadsPriority(wanted: ModelPriority): ModelPriority {
  const tid = thisThreadsId();
  if (wanted === 'normal' || tid === undefined) return 'normal';
  try {
    setPriority(tid, BACKGROUND_NICE);
  } catch {
    return 'normal';
  }
  if (wanted === 'background') return 'background';
  const chrt = CHRT_PATHS.find((path) => existsSync(path));
  if (chrt === undefined) return 'background';
  spawnSync(chrt, ['--idle', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 5_000 });
  return policyOf(tid) === SCHED_IDLE ? 'idle' : 'background';
}

/** A request being embedded: its texts are done one at a time, so that a query can go between them. */
interface Job {
  request: ToEmbeddingWorker;
  vectors: Float32Array[];
}

try {
  const options = workerData as ThreadedModelOptions;
  const priority = lowerThisThreadsPriority(options.priority ?? 'normal');
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
  send({ kind: 'ready', modelId: model.modelId, dimensions: model.dimensions, minSimilarity: model.minSimilarity, priority });
} catch (err) {
  send({ kind: 'failed', message: err instanceof Error ? err.message : String(err) });
}
