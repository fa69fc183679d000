import { Kafka, Partitioners, logLevel, type Consumer } from 'kafkajs';
import { sampleEventBytes } from './corpus.ts';
import { engineCpuPer } from './cpu.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

/**
 * kafkajs on its own, with records the size of a MemoryWritten event: what one bus hop costs
 * before any of our code runs. Idempotent producer with acks=all, as the bus uses (the bus
 * adds transactions on top; those are part of "ours").
 */
export interface RawKafkaResult {
  recordBytes: number;
  /** One record per send, sequential: the broker's ack latency. */
  produce: Summary;
  /** One record produced, then awaited in a running consumer's eachMessage, sequential. */
  produceToConsume: Summary;
  /** Records/s of `records` sent as sequential sends of 500. */
  produceThroughput: number;
  /** The broker's CPU ms (/proc) per record of those sends, and per record sent alone and acknowledged (the `produce` rows). */
  brokerCpuMs: { perBatchedRecord: number; perSingleRecord: number };
  /** Records/s a fresh consumer group reads them back (first to last record, join excluded). */
  consumeThroughput: number;
  records: number;
}

const BATCH = 500;

export async function measureRawKafka(brokers: string[], prefix: string, roundTrips: number, records: number): Promise<RawKafkaResult> {
  const kafka = new Kafka({ clientId: `${prefix}raw`, brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  const consumers: Consumer[] = [];
  const e2eTopic = `${prefix}raw-e2e`;
  const bulkTopic = `${prefix}raw-bulk`;
  await admin.connect();
  await producer.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: e2eTopic, numPartitions: 1 }, { topic: bulkTopic, numPartitions: 4 }],
    });
    const value = sampleEventBytes(0, 100, new Date());

    // Produce and produce→consume latency, one record at a time through a joined consumer.
    const waiting = new Map<string, () => void>();
    const e2e = kafka.consumer({ groupId: `${prefix}raw-e2e`, maxWaitTimeInMs: 500 });
    consumers.push(e2e);
    await e2e.connect();
    await e2e.subscribe({ topic: e2eTopic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => e2e.on(e2e.events.GROUP_JOIN, () => resolve()));
    await e2e.run({ eachMessage: async ({ message }) => waiting.get(message.key?.toString() ?? '')?.() });
    await joined;
    const produceMs: number[] = [];
    const e2eMs: number[] = [];
    const warmup = 20;
    const { cpuMsPerUnit: perSingleRecord } = await engineCpuPer('kafka', roundTrips + warmup, async () => {
      for (let i = 0; i < roundTrips + warmup; i += 1) {
        const key = `k${i}`;
        const arrived = new Promise<void>((resolve) => waiting.set(key, resolve));
        const started = performance.now();
        await producer.send({ topic: e2eTopic, acks: -1, messages: [{ key, value }] });
        const acked = performance.now();
        await arrived;
        waiting.delete(key);
        if (i >= warmup) {
          produceMs.push(acked - started);
          e2eMs.push(performance.now() - started);
        }
        if ((i + 1) % 250 === 0) progress(`raw kafka: produce→consume ${i + 1}/${roundTrips + warmup}`);
      }
    });

    // Throughput: batches of records, then a fresh group reading them all back.
    const sendStarted = performance.now();
    const { cpuMsPerUnit: perBatchedRecord } = await engineCpuPer('kafka', records, async () => {
      for (let sent = 0; sent < records; sent += BATCH) {
        const n = Math.min(BATCH, records - sent);
        await producer.send({ topic: bulkTopic, acks: -1, messages: Array.from({ length: n }, (_, j) => ({ key: `b${sent + j}`, value })) });
      }
    });
    const produceThroughput = perSecond(records, performance.now() - sendStarted);
    progress(`raw kafka: produced ${records} records at ${produceThroughput.toFixed(0)}/s`);
    const reader = kafka.consumer({ groupId: `${prefix}raw-bulk`, maxBytesPerPartition: 4 * 1024 * 1024 });
    consumers.push(reader);
    await reader.connect();
    await reader.subscribe({ topic: bulkTopic, fromBeginning: true });
    let seen = 0;
    let first = 0;
    let firstBatch = 0;
    const done = new Promise<number>((resolve) => {
      void reader.run({
        eachBatch: async ({ batch }) => {
          if (seen === 0) {
            first = performance.now();
            firstBatch = batch.messages.length;
          }
          seen += batch.messages.length;
          if (seen >= records) resolve(performance.now());
        },
      });
    });
    const last = await done;
    // The clock starts when the first batch arrives, so that batch is not counted.
    const consumeThroughput = perSecond(records - firstBatch, last - first);
    progress(`raw kafka: consumed ${records} records at ${consumeThroughput.toFixed(0)}/s`);
    return { recordBytes: value.length, produce: summarize(produceMs), produceToConsume: summarize(e2eMs), produceThroughput, consumeThroughput, records,
      brokerCpuMs: { perBatchedRecord, perSingleRecord } };
  } finally {
    for (const c of consumers) await c.disconnect();
    await producer.disconnect();
    await admin.deleteTopics({ topics: [e2eTopic, bulkTopic] }).catch(() => undefined);
    await admin.deleteGroups([`${prefix}raw-e2e`, `${prefix}raw-bulk`]).catch(() => undefined);
    await admin.disconnect();
  }
}
