/** The pipeline thread's entry (pipeline-thread.ts): opens its stores, starts the consumers, answers for metrics, stops on request. */
import { Writable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger, createMetrics, shutdownTracing } from '@gm/observability';
import { loadPolicySet } from '@gm/policy';
import { clockOnShared, systemClock } from '@gm/time';
import { adoptFileWriteLocks } from '@gm/thread-lock';
import type { FromPipeline, PipelineThreadData, ToPipeline } from './pipeline-thread.ts';
import { startPipeline } from './pipeline.ts';
import { masterKeyEnvOf, openStores } from './stores.ts';

const port = parentPort;
if (port === null) throw new Error('pipeline-worker.ts runs only as a worker thread');
const data = workerData as PipelineThreadData;
const send = (message: FromPipeline): void => port.postMessage(message);

try {
  const { config } = data;
  const clock = data.clock === undefined ? systemClock : clockOnShared(data.clock);
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      send({ kind: 'log', line: chunk.toString() });
      callback();
    },
  });
  const log = createLogger({ name: 'governed-memory', level: config.logLevel, destination });
  // The HTTP thread's registry carries the process metrics.
  const metrics = createMetrics({ processMetrics: false });
  const policySet = loadPolicySet(config.policyDir);
  // The HTTP thread opened the stores first (and re-wrapped keys if the master key changed).
  adoptFileWriteLocks(data.writeLocks);
  const stores = await openStores(config.dataDir, config.partitions, clock, masterKeyEnvOf(config), { instanceId: 'embedded-pipeline', rotate: false, secureErasure: data.secureErasure });
  const handles = await startPipeline({ stores, config, clock, log, metrics, policySet, receiptKeys: data.receiptKeys, plaintextLog: data.plaintextLog }, data.part)
    .catch(async (err: unknown) => {
      await stores.close();
      throw err;
    });
  let closing: Promise<void> | undefined;
  port.on('message', (message: ToPipeline) => {
    if (message.kind === 'metrics') {
      void metrics.registry.getMetricsAsJSON().then((snapshot) => send({ kind: 'metrics', requestId: message.requestId, metrics: snapshot }));
      return;
    }
    closing ??= (async () => {
      for (const h of handles.reverse()) await h.close();
      await stores.close();
      // This thread's own SDK (register-tracing.ts runs in it too): its last spans leave first.
      await shutdownTracing();
      send({ kind: 'closed' });
    })();
  });
  send({ kind: 'ready' });
} catch (err) {
  const error = err instanceof Error ? err : new Error(String(err));
  send({ kind: 'failed', error: { name: error.name, message: error.message } });
}
