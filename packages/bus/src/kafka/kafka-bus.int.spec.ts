/**
 * The Kafka bus against the bus contract, on the broker the engines' global setup provides;
 * each test runs in its own namespace (topic and group prefix), which cleanup deletes. Plus
 * what only the Kafka adapter has to show: exactly-once consume → produce when an attempt
 * fails, when a stalled member is replaced, and when a consumer process is killed mid-stream.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testBus } from '@gm/testing/contracts/bus';
import { engineEndpoint } from '@gm/testing/engines';
import { eventually } from '@gm/testing/eventually';
import type { BusLogger } from '../bus-logger.ts';
import type { Bus, ConsumedMessage, LogPosition } from '../port.ts';
import { createKafkaBus, type KafkaBusOptions } from './kafka-bus.ts';
import type { CommitNotice, CommitNotices } from '../port.ts';
import { waitingOnKafka } from './kafka-waits.ts';

const brokers = (): string[] => engineEndpoint('kafka').split(',');

/** Collects warnings instead of printing them: several tests make handlers fail on purpose. */
function memoryLogger(): BusLogger & { entries: Array<{ obj: object; msg: string }> } {
  const entries: Array<{ obj: object; msg: string }> = [];
  return { entries, warn: (obj, msg) => entries.push({ obj, msg }) };
}

let cleanupAdmin: Promise<Admin> | undefined;
const admin = (): Promise<Admin> => {
  cleanupAdmin ??= (async () => {
    const client = new Kafka({ clientId: 'gm-bus-spec-cleanup', brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
    await client.connect();
    return client;
  })();
  return cleanupAdmin;
};
afterAll(async () => {
  await (await cleanupAdmin)?.disconnect();
});

/** Deletes every topic and consumer group of a test's namespace. */
async function deleteNamespace(prefix: string): Promise<void> {
  const client = await admin();
  const topics = (await client.listTopics()).filter((t) => t.startsWith(prefix));
  if (topics.length > 0) await client.deleteTopics({ topics });
  const groups = (await client.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
  if (groups.length > 0) await client.deleteGroups(groups);
}

const namespace = (): string => `gm-spec-${randomUUID().slice(0, 8)}.`;

/**
 * Commit notices as a deployment's Redis carries them (redis-commit-notices.ts, its own spec):
 * told to every listener of the group, later, never in the announcing call. The contract runs
 * with them, as every distributed service does; without them the waits only poll (the
 * commit-watch unit spec).
 */
function noticeHub(): CommitNotices {
  const listeners = new Map<string, Set<(notice: CommitNotice) => void>>();
  return {
    announce: (notice) => {
      for (const listener of listeners.get(notice.group) ?? []) setImmediate(() => listener(notice));
    },
    listen: async (group, onNotice) => {
      let each = listeners.get(group);
      if (each === undefined) listeners.set(group, (each = new Set()));
      each.add(onNotice);
      return () => each.delete(onNotice);
    },
    close: async () => listeners.clear(),
  };
}

testBus('kafka', async () => {
  const topicPrefix = namespace();
  const logger = memoryLogger();
  const commitNotices = noticeHub();
  const open = () => createKafkaBus({ brokers: brokers(), clientId: 'gm-bus-spec', topicPrefix, logger, commitNotices });
  let bus = open();
  return {
    get bus() {
      return bus;
    },
    // Transaction commit markers take offsets: strictly increasing, not dense.
    offsets: 'increasing' as const,
    reopen: async () => {
      await bus.close();
      bus = open();
      return bus;
    },
    cleanup: async () => {
      await bus.close();
      await deleteNamespace(topicPrefix);
    },
  };
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function collect(bus: Bus, topic: string): Promise<ConsumedMessage[]> {
  const all: ConsumedMessage[] = [];
  for await (const message of bus.readAll(topic)) all.push(message);
  return all;
}

/** Waits until `groupId` committed everything now in `topic` (bounded; the caller asserts). */
async function caughtUp(bus: Bus, groupId: string, topic: string): Promise<boolean> {
  const ends = await bus.endOffsets(topic);
  for (const [partition, end] of ends.entries()) {
    if (end > 0 && !(await bus.waitForCommitted(groupId, { topic, partition, offset: end - 1 }, 20_000))) return false;
  }
  return true;
}

describe('kafka bus: exactly-once consume → produce', () => {
  let topicPrefix: string;
  const opened: Bus[] = [];
  const open = (options: Partial<KafkaBusOptions> = {}): Bus => {
    const bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-bus-spec', topicPrefix, logger: memoryLogger(), ...options });
    opened.push(bus);
    return bus;
  };

  beforeEach(() => {
    topicPrefix = namespace();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((bus) => bus.close()));
    await deleteNamespace(topicPrefix);
  });

  it('reads from the log\'s start once retention deleted the oldest records (memory.ingest keeps a day), and a fully deleted partition reads empty', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 't', partitions: 2 }]);
    const positions = await bus.produce(Array.from({ length: 10 }, (_, i) => ({ topic: 't', key: `k${i}`, value: i })));
    const ends = await bus.endOffsets('t');
    // What retention does to old segments: partition 0 loses everything, partition 1 its first message.
    const firstOf1 = positions.filter((p) => p.partition === 1).map((p) => p.offset).sort((a, b) => a - b);
    const client = await admin();
    await client.fetchTopicMetadata({ topics: [`${topicPrefix}t`] });
    await client.deleteTopicRecords({
      topic: `${topicPrefix}t`, partitions: [{ partition: 0, offset: String(ends[0]) }, { partition: 1, offset: String((firstOf1[0] ?? 0) + 1) }],
    });
    const read = await collect(bus, 't');
    expect(read.filter((m) => m.partition === 0)).toEqual([]);
    expect(read.filter((m) => m.partition === 1).map((m) => m.offset)).toEqual(firstOf1.slice(1));
    expect(await bus.endOffsets('t')).toEqual(ends);
  });

  it('never hands over a message of an aborted transaction, also when transactions interleave and abort out of order (the kill -9 repeat)', async () => {
    // What a killed consumer leaves: several transactions open at once on one output partition,
    // aborted by their successors' fencing in another order than they began. The broker lists
    // aborted transactions in abort order; kafkajs 2.2.4 assumed first-offset order and handed
    // the earlier-begun one's messages to read_committed readers (patches/kafkajs@2.2.4.patch).
    const bus = open();
    await bus.ensureTopics([{ name: 'out', partitions: 1 }]);
    const kafka = new Kafka({ clientId: 'gm-bus-spec-aborts', brokers: brokers(), logLevel: logLevel.NOTHING });
    const producers = await Promise.all(['early', 'late'].map(async (name) => {
      const producer = kafka.producer({ transactionalId: `${topicPrefix}${name}`, idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      return producer;
    }));
    const [early, late] = producers as [typeof producers[0], typeof producers[0]];
    const topic = `${topicPrefix}out`;
    const send = (tx: Awaited<ReturnType<typeof early.transaction>>, value: string) => tx.send({ topic, messages: [{ key: 'k', value: JSON.stringify(value), partition: 0 }] });
    try {
      const earlyTx = await early.transaction();
      await send(earlyTx, 'aborted-early-1');
      const lateTx = await late.transaction();
      await send(lateTx, 'aborted-late-1');
      await send(earlyTx, 'aborted-early-2');
      await lateTx.abort();
      await earlyTx.abort();
      await bus.produce([{ topic: 'out', key: 'k', value: 'committed' }]);
      const consumed: unknown[] = [];
      const sub = await bus.subscribe({ groupId: 'reader', topics: ['out'], handler: async (m) => void consumed.push(m.value) });
      expect(await caughtUp(bus, 'reader', 'out')).toBe(true);
      await sub.close();
      expect(consumed).toEqual(['committed']);
      expect((await collect(bus, 'out')).map((m) => m.value)).toEqual(['committed']);
    } finally {
      await Promise.all(producers.map((p) => p.disconnect()));
    }
  });

  it('numbers offsets strictly increasing per partition; a multi-partition batch is one transaction whose commit marker takes an offset', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 't', partitions: 2 }]);
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const first = await bus.produce(keys.map((key) => ({ topic: 't', key, value: 1 })));
    const second = await bus.produce(keys.map((key) => ({ topic: 't', key, value: 2 })));
    const read = await collect(bus, 't');
    expect(read.map((m) => `${m.partition}/${m.offset}`)).toEqual([...first, ...second].sort((x, y) => x.partition - y.partition || x.offset - y.offset).map((p) => `${p.partition}/${p.offset}`));
    const ends = await bus.endOffsets('t');
    for (const [partition, end] of ends.entries()) {
      const offsets = read.filter((m) => m.partition === partition).map((m) => m.offset);
      // Each batch's messages are contiguous; the marker after each batch leaves one gap.
      const perBatch = offsets.length / 2;
      expect(offsets).toEqual([...Array(perBatch).keys(), ...Array.from({ length: perBatch }, (_, i) => perBatch + 1 + i)]);
      expect(end).toBe(2 * perBatch + 2);
    }
    // A single-partition batch needs no transaction: its offsets continue densely.
    const [single] = await bus.produce([{ topic: 't', key: 'a', value: 3 }]);
    expect(single?.offset).toBe(ends[single?.partition ?? -1]);
  });

  it('a handler that throws after ctx.send leaves nothing of that attempt for read_committed readers', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 'in', partitions: 2 }, { name: 'out', partitions: 2 }]);
    await bus.produce(['a', 'b', 'c', 'd'].map((key) => ({ topic: 'in', key, value: key })));
    const attempts = new Map<string, number>();
    const sub = await bus.subscribe({
      groupId: 'g', topics: ['in'], maxAttempts: 3, retryBackoffMs: 1,
      handler: async (m, ctx) => {
        const attempt = (attempts.get(m.key) ?? 0) + 1;
        attempts.set(m.key, attempt);
        ctx.send([{ topic: 'out', key: m.key, value: { key: m.key, attempt } }, { topic: 'out', key: `${m.key}-2`, value: { key: m.key, attempt } }]);
        if (attempt === 1) throw new Error('first attempt fails after sending');
      },
    });
    expect(await caughtUp(bus, 'g', 'in')).toBe(true);
    await sub.close();
    const out = (await collect(bus, 'out')).map((m) => m.value as { key: string; attempt: number });
    expect(out).toHaveLength(8);
    expect(out.every((v) => v.attempt === 2)).toBe(true);
    expect(await collect(bus, 'in.dlq')).toEqual([]);
  });

  it('fetches a partition ahead while its batch is handled: a message arriving meanwhile is handed over right after it, not after a fetch wait', async () => {
    // A fetch wait longer than the wait for the commit below: a partition left out of the long
    // poll while its batch ran (the other partition idle) would get its next message only after
    // it. (Closing waits for the fetch in flight, so not much longer.)
    const bus = open({ fetchWaitMs: 15_000, sessionTimeoutMs: 75_000 });
    await bus.ensureTopics([{ name: 'in', partitions: 2 }]);
    const key = Array.from({ length: 64 }, (_, i) => `k${i}`).find((k) => bus.partitionFor('in', k) === 0) ?? 'k0';
    const started = deferred();
    const release = deferred();
    const handled: unknown[] = [];
    const sub = await bus.subscribe({
      groupId: 'g', topics: ['in'],
      handler: async (m) => {
        if (m.value === 'first') {
          started.resolve();
          await release.promise;
        }
        handled.push(m.value);
      },
    });
    await bus.produce([{ topic: 'in', key, value: 'first' }]);
    await started.promise;
    const [second] = await bus.produce([{ topic: 'in', key, value: 'second' }]);
    if (second === undefined) throw new Error('produce returned no position');
    release.resolve();
    expect(await bus.waitForCommitted('g', second, 10_000)).toBe(true);
    expect(handled).toEqual(['first', 'second']);
    await sub.close();
  }, 60_000);

  it('fences a member that stalled past its session: its late result is never committed, and its successor\'s appears once', async () => {
    const stalled = deferred();
    const release = deferred();
    const aLog = memoryLogger();
    const a = open({ sessionTimeoutMs: 6_000, logger: aLog });
    const b = open({ sessionTimeoutMs: 6_000 });
    await a.ensureTopics([{ name: 'in', partitions: 1 }, { name: 'out', partitions: 1 }]);
    const positions: LogPosition[] = await a.produce([0, 1, 2].map((value) => ({ topic: 'in', key: 'k', value })));
    const aCommitted: unknown[] = [];
    const aDiscarded: unknown[] = [];
    const subA = await a.subscribe({
      groupId: 'g', topics: ['in'],
      handler: async (m, ctx) => {
        ctx.onCommitted(() => aCommitted.push(m.value));
        ctx.onDiscarded(() => aDiscarded.push(m.value));
        ctx.send([{ topic: 'out', key: 'k', value: { value: m.value, by: 'a' } }]);
        if (m.value === 1) {
          // Neither heartbeats nor commits while stuck: the group evicts it after 6 s.
          stalled.resolve();
          await release.promise;
        }
      },
    });
    await stalled.promise;
    const subB = await b.subscribe({ groupId: 'g', topics: ['in'], handler: async (m, ctx) => {
      ctx.send([{ topic: 'out', key: 'k', value: { value: m.value, by: 'b' } }]);
    } });
    const last = positions.at(-1);
    if (last === undefined) throw new Error('produce returned no positions');
    expect(await b.waitForCommitted('g', last, 20_000)).toBe(true);
    release.resolve();
    // Closing waits for a's in-flight message: its transaction is fenced, not committed.
    await subA.close();
    await subB.close();
    const out = (await collect(b, 'out')).map((m) => m.value);
    expect(out).toEqual([{ value: 0, by: 'a' }, { value: 1, by: 'b' }, { value: 2, by: 'b' }]);
    expect(aLog.entries.map((e) => e.msg)).toContain('bus partition taken over by another member; its result was not committed');
    // The stalled member's hooks tell it the same: only its first result counts.
    expect(aCommitted).toEqual([0]);
    expect(aDiscarded).toEqual([1]);
    expect(await b.committedOffsets('g', 'in')).toEqual(await b.endOffsets('in'));
  });

  it('survives batches fetched ahead of a stalled one that run while the member is out of the group, and commits them once it joins again', async () => {
    const log = memoryLogger();
    const bus = open({ sessionTimeoutMs: 6_000, logger: log });
    await bus.ensureTopics([{ name: 'in', partitions: 1 }]);
    await bus.produce([{ topic: 'in', key: 'k', value: 0 }]);
    const stalled = deferred();
    const release = deferred();
    const handled: unknown[] = [];
    const sub = await bus.subscribe({
      groupId: 'ahead-while-out', topics: ['in'],
      batchHandler: async (messages) => {
        if (handled.length === 0) {
          stalled.resolve();
          await release.promise;
        }
        handled.push(...messages.map((m) => m.value));
      },
    });
    try {
      await stalled.promise;
      // Fetched ahead while the first batch stalls: its turn comes after the member left.
      const [last] = await bus.produce([{ topic: 'in', key: 'k', value: 1 }]);
      if (last === undefined) throw new Error('produce returned no position');
      await eventually('the member left after the stall', async () => log.entries.some((e) => e.msg.startsWith('bus handler stalled past the session timeout')), 30_000);
      release.resolve();
      // Whatever ran while the member was out is fetched again from the last commit once it joins.
      expect(await bus.waitForCommitted('ahead-while-out', last, 30_000)).toBe(true);
      expect(new Set(handled)).toEqual(new Set([0, 1]));
    } finally {
      release.resolve();
      await sub.close();
    }
  }, 60_000);

  it('keeps its partitions while a handler waits on Kafka past the session timeout (a read or produce meeting a hung broker); a handler stuck on its own leaves', async () => {
    const log = memoryLogger();
    const bus = open({ sessionTimeoutMs: 6_000, logger: log });
    await bus.ensureTopics([{ name: 'in', partitions: 1 }]);
    await bus.produce([{ topic: 'in', key: 'k', value: 0 }]);
    const release = deferred();
    const waiting = deferred();
    const stuck = deferred();
    // What the bus does around its own requests (produce, readPartition, endOffsets); here the
    // request is one that does not answer until released, as one to a frozen broker.
    const onKafka = await bus.subscribe({ groupId: 'waits-on-kafka', topics: ['in'], handler: async () => {
      waiting.resolve();
      await waitingOnKafka(() => release.promise);
    } });
    await waiting.promise;
    const onItsOwn = await bus.subscribe({ groupId: 'stuck', topics: ['in'], handler: async () => {
      stuck.resolve();
      await release.promise;
    } });
    await stuck.promise;
    const stalledGroups = () => log.entries.filter((e) => e.msg.startsWith('bus handler stalled')).map((e) => (e.obj as { groupId: string }).groupId);
    // The stuck handler began after the waiting one: once it is reported, the waiting one has
    // been in flight past the session timeout too.
    try {
      await eventually('the stuck handler reported as stalled', async () => stalledGroups().includes('stuck'), 30_000);
      expect(stalledGroups()).toEqual(['stuck']);
      expect(log.entries.find((e) => e.msg.startsWith('bus handler stalled'))?.obj).toMatchObject({ stalled: ['in[0]'] });
    } finally {
      release.resolve();
    }
    await onKafka.close();
    await onItsOwn.close();
    expect(await bus.committedOffsets('waits-on-kafka', 'in')).toEqual(await bus.endOffsets('in'));
  }, 60_000);

  it('a consumer process killed mid-stream leaves no duplicate for read_committed readers; its successor finishes the stream', async () => {
    const bus = open({ sessionTimeoutMs: 6_000 });
    await bus.ensureTopics([{ name: 'in', partitions: 2 }, { name: 'out', partitions: 2 }]);
    const values = Array.from({ length: 80 }, (_, i) => i);
    // Several batches, so the child commits some while more are still to come.
    for (let i = 0; i < values.length; i += 10) {
      await bus.produce(values.slice(i, i + 10).map((value) => ({ topic: 'in', key: `k${value % 7}`, value })));
    }
    const child = fileURLToPath(new URL('./kafka-bus.crash-child.ts', import.meta.url));
    const root = fileURLToPath(new URL('../../../..', import.meta.url));
    const proc = spawn(process.execPath, ['--import', 'tsx', child, brokers().join(','), topicPrefix], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_code, signal) => resolve(signal)));
    try {
      // Killed once it has committed part of the stream (it says so as each result commits): it
      // is then inside later messages. The deadline only turns a child that never gets there into
      // a clear failure.
      const committed = await new Promise<number>((resolve, reject) => {
        let count = 0;
        let out = '';
        const timer = setTimeout(() => reject(new Error(`the child committed only ${count} results in 20 s`)), 20_000);
        proc.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          count = out.split('\n').filter((line) => line.startsWith('committed ')).length;
          if (count >= 20) {
            clearTimeout(timer);
            resolve(count);
          }
        });
        void exited.then(() => reject(new Error(`the child exited after ${count} commits`)));
      });
      expect(committed).toBeGreaterThanOrEqual(20);
    } finally {
      proc.kill('SIGKILL');
    }
    expect(await exited).toBe('SIGKILL');
    expect((await collect(bus, 'out')).length).toBeLessThan(values.length);

    const sub = await bus.subscribe({ groupId: 'g', topics: ['in'], handler: async (m, ctx) => {
      ctx.send([{ topic: 'out', key: m.key, value: m.value }]);
    } });
    expect(await caughtUp(bus, 'g', 'in')).toBe(true);
    await sub.close();
    const out = (await collect(bus, 'out')).map((m) => m.value as number).sort((x, y) => x - y);
    expect(out).toEqual(values);
  });
});
