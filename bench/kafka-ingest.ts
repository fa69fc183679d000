/**
 * Ingest straight onto Kafka (docs/ingest.md): kafkajs producers send requests to memory.ingest in
 * sends of 500 for a fixed time, the ingest-gateway admits them, and a consumer of the tenant's
 * results topic counts their results as they arrive. A probe meanwhile produces one
 * request with a fresh word at a time and searches over HTTP until it is found.
 *
 * - Admitted writes/s: accepted results ÷ (first send → the last result of what was produced).
 * - The producers keep at most WINDOW requests unanswered, as a platform's flow control would
 *   (otherwise 60 s of kafkajs speed would queue half an hour of work): the figure is then what
 *   the pipeline sustains, not what Kafka can absorb.
 */
import os from 'node:os';
import { randomBytes, randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { openIngestProducer, resultsTopicOf, type IngestRequest } from '@gm/examples/ingest-producer';
import type { HttpTarget } from './administration.ts';
import { writeBody, type MeasuredProcesses } from './http-probe.ts';
import { costPerWrite, engineBoundCeiling, sampleCpu, type CpuCost } from './cpu.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

export interface KafkaIngestResult {
  producers: number;
  requestsPerSend: number;
  seconds: number;
  produced: number;
  accepted: number;
  rejected: number;
  /** Accepted results ÷ (first send → last result). */
  admittedPerSecond: number;
  /** A send of 500 → the last result of those 500. */
  sendToResults: Summary;
  /** The probe's request produced → the first HTTP search that returns it. */
  visible: Summary;
  /** CPU ms per accepted request of each service and engine, from the first send to the last result. */
  cpu?: CpuCost[];
  /**
   * The engine-bound ceiling of this machine: its cores ÷ the engines' CPU ms per accepted
   * request (Kafka, Elasticsearch, Redis, as measured here), and admittedPerSecond ÷ that.
   */
  ceiling?: { cores: number; enginesMsPerWrite: number; writesPerSecond: number; ratio: number };
}

const PRODUCERS = 4;
const PER_SEND = 500;
const WINDOW = 2_000;
const SUBJECTS = 200;

export interface KafkaIngestTarget {
  http: HttpTarget;
  brokers: string[];
  namespace: string;
  /** A write+search capability of the tenant the load writes to. */
  token: string;
  /** The deployment's services and engines, charged the load's CPU. */
  processes?: MeasuredProcesses;
}

const request = (content: string, subjectId: string, requestId: string): IngestRequest => ({ requestId, ...writeBody(content, subjectId) }) as IngestRequest;

export async function measureKafkaIngest(t: KafkaIngestTarget, seconds: number, label: string): Promise<KafkaIngestResult> {
  const run = randomBytes(3).toString('hex');
  const kafka = new Kafka({ clientId: `bench-ingest-${run}`, brokers: t.brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `${t.namespace}.bench-results-${run}`, readUncommitted: false, maxWaitTimeInMs: 100 });
  const sentAt = new Map<string, { at: number; left: number }>();
  const sendMs: number[] = [];
  let produced = 0;
  let accepted = 0;
  let rejected = 0;
  let lastResultAt = 0;
  // The tenant's results topic (design §4.1): created here if the gateway has not yet (as it would, one partition), so the consumer can join before the load.
  const topic = resultsTopicOf({ namespace: t.namespace, capability: t.token });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] }).finally(() => admin.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: false });
  const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const message of batch.messages) {
        const result = JSON.parse(message.value?.toString('utf8') ?? '{}') as { requestId: string; outcome: string };
        if (result.requestId.startsWith(`probe-${run}`)) continue;
        if (!result.requestId.startsWith(`kb-${run}`)) continue;
        if (result.outcome === 'accepted') accepted += 1;
        else rejected += 1;
        lastResultAt = performance.now();
        const send = result.requestId.slice(0, result.requestId.lastIndexOf('-'));
        const entry = sentAt.get(send);
        if (entry !== undefined && --entry.left === 0) {
          sendMs.push(lastResultAt - entry.at);
          sentAt.delete(send);
        }
      }
    },
  });
  await joined;
  const producers = await Promise.all(Array.from({ length: PRODUCERS + 1 }, () => openIngestProducer({ brokers: t.brokers, namespace: t.namespace, capability: t.token })));
  const cpu = t.processes === undefined ? undefined : sampleCpu(t.processes);
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const answered = () => accepted + rejected;
  try {
    const visible = probe(t, producers[PRODUCERS]!, run, () => performance.now() < deadline);
    // Its failure is reported where it is awaited, after the load: until then not an unhandled rejection (a crash, no cleanup).
    visible.catch(() => undefined);
    await Promise.all(producers.slice(0, PRODUCERS).map(async (producer, p) => {
      for (let n = 0; performance.now() < deadline; n += 1) {
        while (produced - answered() > WINDOW && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
        const send = `kb-${run}-${p}-${n}`;
        const requests = Array.from({ length: PER_SEND }, (_, i) => request(`kafka ingest ${p} ${n} ${i} harbor invoice`, `ingest-k${(p * 31 + n * 7 + i) % SUBJECTS}`, `${send}-${i}`));
        sentAt.set(send, { at: performance.now(), left: PER_SEND });
        await producer.send(requests);
        produced += PER_SEND;
      }
    }));
    const samples = await visible;
    // Every produced request is answered: wait for the pipeline to drain (bounded, with progress).
    const drainDeadline = performance.now() + 600_000;
    let reported = performance.now();
    while (answered() < produced && performance.now() < drainDeadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (performance.now() - reported > 10_000) {
        progress(`${label}: kafka ingest draining, ${answered()}/${produced} answered`);
        reported = performance.now();
      }
    }
    if (answered() < produced) throw new Error(`${label}: ${produced - answered()} of ${produced} ingest requests had no result after 10 minutes`);
    const admittedPerSecond = perSecond(accepted, lastResultAt - started);
    const costs = cpu === undefined ? undefined : costPerWrite(cpu.stop(), performance.now() - started, accepted);
    const cores = os.cpus().length;
    const bound = costs === undefined ? undefined : engineBoundCeiling(costs, cores);
    const result: KafkaIngestResult = {
      producers: PRODUCERS, requestsPerSend: PER_SEND, seconds, produced, accepted, rejected,
      admittedPerSecond, sendToResults: summarize(sendMs), visible: summarize(samples),
      ...(costs === undefined ? {} : { cpu: costs }),
      ...(bound === undefined ? {} : { ceiling: { cores, ...bound, ratio: admittedPerSecond / bound.writesPerSecond } }),
    };
    progress(`${label}: kafka ingest ${result.admittedPerSecond.toFixed(0)} admitted writes/s (${accepted} of ${produced}, ${rejected} rejected); write→searchable p95 ${result.visible.p95.toFixed(0)} ms`);
    return result;
  } finally {
    for (const producer of producers) await producer.close();
    await consumer.disconnect();
  }
}

/** Until `running()` stops: one request with a fresh word, then HTTP searches until one returns it. */
async function probe(
  t: KafkaIngestTarget, producer: Awaited<ReturnType<typeof openIngestProducer>>, run: string, running: () => boolean,
): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; running(); i += 1) {
    const word = `kprobe${randomBytes(6).toString('hex')}`;
    const started = performance.now();
    await producer.send([request(`kafka ingest visibility ${word}`, `ingest-kprobe-${i % 7}`, `probe-${run}-${randomUUID()}`)]);
    for (;;) {
      const res = await fetch(`${t.http.url}/v1/search`, {
        method: 'POST', headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query: word, limit: 5 }),
      });
      const body = (await res.json()) as { items?: unknown[] };
      if (res.status === 200 && (body.items?.length ?? 0) > 0) break;
      if (res.status !== 200) throw new Error(`the kafka ingest probe's search answered ${res.status}`);
      // Without a consistency token to wait on, the probe polls; 50 ms apart so that its searches are not a load of their own.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    samples.push(performance.now() - started);
  }
  return samples;
}
