/**
 * The consumer services in a worker thread of their own (pipeline.ts, MEMORY_PIPELINE=thread):
 * SQLite's synchronous work on the pipeline's side never blocks the HTTP loop, and the two
 * loops use two cores.
 *
 * - The thread opens its own connections to the data directory's files. Buses on one file wake
 *   each other across threads (sqlite-bus.ts), so nothing waits for a poll, and the two
 *   threads' writes to one file queue on a shared lock (@gm/thread-lock), never in SQLite's
 *   sleeping busy handler.
 * - Its log lines come back to the runtime's log destination, its metrics to /metrics.
 * - A test's ManualClock reaches it as shared memory: moving the clock moves both threads.
 */
import { Worker } from 'node:worker_threads';
import type { Logger, MetricsSnapshot } from '@gm/observability';
import type { SigningKeyPair } from '@gm/policy';
import { typeScriptWorkerExecArgv } from '@gm/thread-lock';
import type { RuntimeConfig } from './config.ts';
import type { PipelinePart } from './pipeline.ts';

/** What the thread needs to start: plain data only (it crosses the thread boundary by copy). */
export interface PipelineThreadData {
  /** Which services this thread runs (pipeline.ts). */
  part: PipelinePart;
  config: RuntimeConfig;
  receiptKeys: SigningKeyPair;
  plaintextLog: boolean;
  /** See RuntimeOptions.secureErasure. */
  secureErasure: boolean;
  /** A ManualClock's shared milliseconds; undefined = the system clock. */
  clock: SharedArrayBuffer | undefined;
  /** The HTTP thread's write locks of the data directory's files (@gm/thread-lock). */
  writeLocks: Array<[string, SharedArrayBuffer]>;
}

export type FromPipeline =
  | { kind: 'ready' }
  | { kind: 'failed'; error: { name: string; message: string } }
  | { kind: 'log'; line: string }
  | { kind: 'metrics'; requestId: number; metrics: MetricsSnapshot }
  | { kind: 'closed' };

export type ToPipeline = { kind: 'close' } | { kind: 'metrics'; requestId: number };

export interface PipelineThreadHost {
  /** Where the thread's log lines go (the runtime's log destination). */
  destination: NodeJS.WritableStream;
  log: Logger;
  /** The thread stopped on its own after it started. */
  onFailure(err: Error): void;
}

export interface PipelineThread {
  /** The thread's metrics, to merge with the runtime's own. */
  metrics(): Promise<MetricsSnapshot[]>;
  close(): Promise<void>;
}

export async function startPipelineThread(data: PipelineThreadData, host: PipelineThreadHost): Promise<PipelineThread> {
  const worker = new Worker(new URL('./pipeline-worker.ts', import.meta.url), { workerData: data, execArgv: typeScriptWorkerExecArgv() });
  let requests = 0;
  const pendingMetrics = new Map<number, (metrics: MetricsSnapshot[]) => void>();
  let started = false;
  let closing = false;
  const closed = Promise.withResolvers<void>();
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const ready = Promise.withResolvers<void>();
  let lastError: Error | undefined;
  worker.on('message', (message: FromPipeline) => {
    switch (message.kind) {
      case 'ready':
        started = true;
        ready.resolve();
        break;
      case 'failed':
        ready.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
        break;
      case 'log':
        host.destination.write(message.line);
        break;
      case 'metrics':
        pendingMetrics.get(message.requestId)?.([message.metrics]);
        pendingMetrics.delete(message.requestId);
        break;
      case 'closed':
        closed.resolve();
        break;
    }
  });
  worker.on('error', (err) => {
    lastError = err;
  });
  void exited.then((code) => {
    // Nobody waits for metrics of a thread that is gone.
    for (const resolve of pendingMetrics.values()) resolve([]);
    pendingMetrics.clear();
    closed.resolve();
    const err = lastError ?? new Error(`the pipeline thread (${data.part}) exited with code ${code}`);
    if (!started) ready.reject(err);
    else if (!closing) host.onFailure(err);
  });
  try {
    await ready.promise;
  } catch (err) {
    await worker.terminate();
    throw err;
  }
  return {
    metrics: () => new Promise((resolve) => {
      if (closing) return resolve([]);
      const requestId = ++requests;
      pendingMetrics.set(requestId, resolve);
      worker.postMessage({ kind: 'metrics', requestId } satisfies ToPipeline);
    }),
    close: async () => {
      if (closing) return closed.promise;
      closing = true;
      worker.postMessage({ kind: 'close' } satisfies ToPipeline);
      await closed.promise;
      await worker.terminate();
    },
  };
}
