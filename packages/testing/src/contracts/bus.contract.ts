/**
 * The bus contract: what every adapter of `@gm/bus`'s port must do, asserted the way a
 * service would notice it. The embedded (SQLite) and the Kafka adapter both run it, which is
 * how the two runtimes keep one semantics.
 *
 * Each test uses its own topic and group names, so an adapter may share one engine between
 * tests; waits are on conditions (waitForCommitted, handler signals), never on sleeps.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GovernedMemoryError } from '@gm/contracts';
import { PartitionCountMismatchError } from '@gm/bus';
import type { Bus, ConsumedMessage, LogPosition, MessageHandler, OutgoingMessage, Subscription, SubscriptionSettings } from '@gm/bus';

export interface BusFixture {
  bus: Bus;
  cleanup: () => Promise<void>;
  /** Closes the bus and opens the same durable store again. */
  reopen?: () => Promise<Bus>;
  /**
   * 'dense' (default): offsets of a partition are 0, 1, 2, … with no gaps (the SQLite log).
   * 'increasing': strictly increasing, consecutive within one produce batch, with gaps between
   * batches allowed — Kafka's transaction commit markers take an offset each.
   */
  offsets?: 'dense' | 'increasing';
}

/** Long enough for a slow engine, short enough to fail a stuck test with a clear message. */
const CONDITION_TIMEOUT_MS = 15_000;

/** Kafka's Java murmur2 (as in kafkajs's Java-compatible partitioner tests). */
const KAFKA_MURMUR2: ReadonlyArray<readonly [string, number]> = [
  ['0', 971027396], ['1', -1993445489], ['128', -326012175], ['2187', -1508407203],
  ['16384', -325739742], ['4782969', -1182699775], ['170859375', -1658323481], ['100:48069', 1009543857],
];

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

async function collect(bus: Bus, topic: string): Promise<ConsumedMessage[]> {
  const all: ConsumedMessage[] = [];
  for await (const message of bus.readAll(topic)) all.push(message);
  return all;
}

/** Waits until `groupId` has committed everything currently in `topic`. */
async function caughtUp(bus: Bus, groupId: string, topic: string): Promise<void> {
  const ends = await bus.endOffsets(topic);
  for (const [partition, end] of ends.entries()) {
    if (end === 0) continue;
    const done = await bus.waitForCommitted(groupId, { topic, partition, offset: end - 1 }, CONDITION_TIMEOUT_MS);
    expect(done, `${groupId} did not commit ${topic}[${partition}] up to ${end}`).toBe(true);
  }
  expect(await bus.committedOffsets(groupId, topic)).toEqual(ends);
}

/** A handler that records what it got, by subscription. */
function recorder(): { received: ConsumedMessage[]; handler: MessageHandler } {
  const received: ConsumedMessage[] = [];
  return { received, handler: async (message) => { received.push(message); } };
}

/** `count` keys that together cover every partition of `topic`. */
function keysCoveringPartitions(bus: Bus, topic: string, partitions: number, count: number): string[] {
  const keys: string[] = [];
  const covered = new Set<number>();
  for (let i = 0; keys.length < count || covered.size < partitions; i++) {
    const key = `key-${i}`;
    const p = bus.partitionFor(topic, key);
    if (keys.length < count || !covered.has(p)) { keys.push(key); covered.add(p); }
  }
  return keys;
}

const messagesTo = (topic: string, keys: string[], tag: string): OutgoingMessage[] =>
  keys.map((key, i) => ({ topic, key, value: { tag, i } }));

const byPartition = (messages: ConsumedMessage[]): Map<number, number[]> => {
  const offsets = new Map<number, number[]>();
  for (const m of messages) offsets.set(m.partition, [...(offsets.get(m.partition) ?? []), m.offset]);
  return offsets;
};
const positionId = (m: LogPosition): string => `${m.topic}/${m.partition}/${m.offset}`;

export function testBus(adapterName: string, factory: () => Promise<BusFixture>): void {
  describe(`Bus contract: ${adapterName}`, () => {
    let fixture: BusFixture;
    let bus: Bus;
    let ns: string;
    const topic = (name: string): string => `${ns}.${name}`;
    const group = (name: string): string => `${ns}.${name}`;
    /** Most tests consume `<ns>.in`. */
    const subscribeIn = (groupName: string, handler: MessageHandler, options: Partial<SubscriptionSettings> = {}): Promise<Subscription> =>
      bus.subscribe({ groupId: group(groupName), topics: [topic('in')], handler, ...options });
    const caughtUpIn = (groupName: string): Promise<void> => caughtUp(bus, group(groupName), topic('in'));
    /** Subscribes, waits until the group committed everything now in `<ns>.in`, closes. */
    const consumeIn = async (groupName: string, handler: MessageHandler = async () => undefined, options: Partial<SubscriptionSettings> = {}): Promise<void> => {
      const sub = await subscribeIn(groupName, handler, options);
      try {
        await caughtUpIn(groupName);
      } finally {
        await sub.close();
      }
    };
    const valuesIn = (keys: string[], tag: string): unknown[] => messagesTo(topic('in'), keys, tag).map((m) => m.value);

    beforeEach(async () => {
      fixture = await factory();
      bus = fixture.bus;
      ns = `contract-${randomUUID().slice(0, 8)}`;
    });
    afterEach(async () => { await fixture.cleanup(); });

    describe('topics and produce', () => {
      it('creates each topic with its .dlq, idempotently', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 3 }]);
        expect(await bus.endOffsets(topic('t'))).toEqual([0, 0, 0]);
        expect(await bus.endOffsets(topic('t.dlq'))).toEqual([0, 0, 0]);
        await bus.produce([{ topic: topic('t'), key: 'k', value: 1 }]);
        await bus.ensureTopics([{ name: topic('t'), partitions: 3 }]);
        expect((await bus.endOffsets(topic('t'))).length).toBe(3);
        expect(await collect(bus, topic('t'))).toHaveLength(1);
      });

      it('refuses another partition count for an existing topic, naming it and both counts, and creates nothing', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 3 }]);
        for (const wanted of [1, 5]) {
          const attempt = bus.ensureTopics([{ name: topic('new'), partitions: wanted }, { name: topic('t'), partitions: wanted }]);
          await expect(attempt).rejects.toBeInstanceOf(PartitionCountMismatchError);
          await expect(attempt).rejects.toMatchObject({ topic: topic('t'), existing: 3, wanted });
          await expect(attempt).rejects.toThrow(`topic "${topic('t')}" has 3 partitions, but ${wanted} were asked for`);
        }
        expect((await bus.endOffsets(topic('t'))).length).toBe(3);
        await expect(bus.endOffsets(topic('new'))).rejects.toThrow(topic('new'));
      });

      it('returns positions in input order: offsets from 0 per partition of the key, consecutive within a batch', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 3 }]);
        const keys = keysCoveringPartitions(bus, topic('t'), 3, 6);
        const positions = await bus.produce(messagesTo(topic('t'), [...keys, ...keys], 'x'));
        const next = [0, 0, 0];
        positions.forEach((position, i) => {
          const key = keys[i % keys.length] ?? '';
          expect(position.topic).toBe(topic('t'));
          expect(position.partition).toBe(bus.partitionFor(topic('t'), key));
          expect(position.offset).toBe(next[position.partition]);
          next[position.partition] = position.offset + 1;
        });
        if (fixture.offsets === 'increasing') {
          const ends = await bus.endOffsets(topic('t'));
          ends.forEach((end, p) => expect(end).toBeGreaterThanOrEqual(next[p] ?? 0));
          for (let p = 0; p < 3; p += 1) {
            for await (const extra of bus.readPartition(topic('t'), p, next[p] ?? 0)) throw new Error(`unexpected message at ${extra.offset}`);
          }
        } else {
          expect(await bus.endOffsets(topic('t'))).toEqual(next);
        }
      });

      it('rejects a batch naming an unknown topic and appends none of it', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 2 }]);
        const missing = topic('missing');
        await expect(bus.produce([{ topic: topic('t'), key: 'a', value: 1 }, { topic: missing, key: 'b', value: 2 }]))
          .rejects.toThrow(missing);
        expect(await bus.endOffsets(topic('t'))).toEqual([0, 0]);
      });

      it('rejects a batch with a value JSON cannot carry and appends none of it', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 2 }]);
        await expect(bus.produce([{ topic: topic('t'), key: 'a', value: 1 }, { topic: topic('t'), key: 'b', value: 10n }]))
          .rejects.toThrow();
        expect(await bus.endOffsets(topic('t'))).toEqual([0, 0]);
      });

      it('places keys in the partitions Kafka\'s default partitioner picks', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 7 }]);
        for (const [key, hash] of KAFKA_MURMUR2) {
          expect(bus.partitionFor(topic('t'), key), key).toBe((hash & 0x7fffffff) % 7);
        }
      });
    });

    describe('readAll', () => {
      it('yields every message partition by partition in offset order, with key, value and headers', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 3 }]);
        const keys = keysCoveringPartitions(bus, topic('t'), 3, 9);
        const sent: OutgoingMessage[] = keys.map((key, i) => ({
          topic: topic('t'), key, value: { i, nested: { list: [i, 'x'], flag: i % 2 === 0 } },
          ...(i % 2 === 0 ? { headers: { 'trace-id': `t${i}` } } : {}),
        }));
        const expected = (await bus.produce(sent))
          .map((position, i) => ({ ...position, key: sent[i]?.key, value: sent[i]?.value, headers: sent[i]?.headers ?? {} }))
          .sort((a, b) => a.partition - b.partition || a.offset - b.offset);
        const read = await collect(bus, topic('t'));
        expect(read.map(({ timestamp: _, ...rest }) => rest)).toEqual(expected);
        for (const m of read) expect(Number.isInteger(m.timestamp)).toBe(true);
      });

      it('pages through a large topic without losing or reordering messages', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 2 }]);
        const keys = Array.from({ length: 1234 }, (_, i) => `k${i % 50}`);
        await bus.produce(messagesTo(topic('t'), keys, 'bulk'));
        const read = await collect(bus, topic('t'));
        expect(read).toHaveLength(1234);
        const offsets = byPartition(read);
        expect([...offsets.keys()]).toEqual([...offsets.keys()].sort((a, b) => a - b));
        for (const list of offsets.values()) expect(list).toEqual(list.map((_, i) => i));
      });

      it('reads one partition from an offset to its end (readPartition), and refuses a partition that does not exist', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 2 }]);
        const keys = keysCoveringPartitions(bus, topic('t'), 2, 8);
        const positions = await bus.produce(messagesTo(topic('t'), keys, 'p'));
        const inOne = positions.filter((p) => p.partition === 1).map((p) => p.offset);
        const read: number[] = [];
        for await (const m of bus.readPartition(topic('t'), 1, 2)) {
          expect(m.partition).toBe(1);
          read.push(m.offset);
        }
        expect(read).toEqual(inOne.filter((o) => o >= 2));
        const past: number[] = [];
        for await (const m of bus.readPartition(topic('t'), 1, 10_000)) past.push(m.offset);
        expect(past).toEqual([]);
        await expect(async () => {
          for await (const _ of bus.readPartition(topic('t'), 2, 0)) break;
        }).rejects.toThrow();
      });

      it('reads only the messages of the keys asked for (readPartition keys), in order, with their own offsets', async () => {
        await bus.ensureTopics([{ name: topic('t'), partitions: 1 }]);
        const t = topic('t');
        const positions = await bus.produce([
          { topic: t, key: 'a', value: { n: 0 } }, { topic: t, key: 'b', value: { n: 1 } }, { topic: t, key: 'a', value: { n: 2 } },
          { topic: t, key: 'c', value: { n: 3 } }, { topic: t, key: 'b', value: { n: 4 } },
        ]);
        const read: Array<{ key: string; offset: number; value: unknown }> = [];
        for await (const m of bus.readPartition(t, 0, 0, { keys: new Set(['a', 'b']) })) read.push({ key: m.key, offset: m.offset, value: m.value });
        expect(read).toEqual([0, 1, 2, 4].map((i) => ({ key: ['a', 'b', 'a', 'c', 'b'][i], offset: positions[i]?.offset, value: { n: i } })));
        const none: unknown[] = [];
        for await (const m of bus.readPartition(t, 0, 0, { keys: new Set(['z']) })) none.push(m);
        expect(none).toEqual([]);
      });

      it('lets a reader folding a compacted topic by key see the latest value of each key', async () => {
        await bus.ensureTopics([{ name: topic('records'), partitions: 2, compacted: true }]);
        const t = topic('records');
        await bus.produce([
          { topic: t, key: 'r1', value: { v: 1 } }, { topic: t, key: 'r2', value: { v: 1 } },
          { topic: t, key: 'r1', value: { v: 2 } }, { topic: t, key: 'r1', value: { v: 3 } },
          { topic: t, key: 'r2', value: { v: 2 } },
        ]);
        const folded = new Map<string, unknown>();
        for (const m of await collect(bus, t)) folded.set(m.key, m.value);
        expect(Object.fromEntries(folded)).toEqual({ r1: { v: 3 }, r2: { v: 2 } });
      });
    });

    describe('subscriptions', () => {
      it('delivers every message once, in offset order per partition, from the earliest by default', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 3 }]);
        const keys = keysCoveringPartitions(bus, topic('in'), 3, 12);
        await bus.produce(messagesTo(topic('in'), keys, 'before'));
        const { received, handler } = recorder();
        const sub = await subscribeIn('g', handler);
        await bus.produce(messagesTo(topic('in'), keys, 'after'));
        await caughtUpIn('g');
        await sub.close();
        expect(received).toHaveLength(24);
        const delivered = byPartition(received);
        if (fixture.offsets === 'increasing') {
          // In order and exactly the log's offsets, whatever gaps the engine leaves between batches.
          const logged = byPartition(await collect(bus, topic('in')));
          for (const [p, list] of delivered) expect(list).toEqual(logged.get(p));
        } else {
          for (const list of delivered.values()) expect(list).toEqual(list.map((_, i) => i));
        }
      });

      it('never runs two handlers of one partition at the same time', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        await bus.produce(messagesTo(topic('in'), keysCoveringPartitions(bus, topic('in'), 2, 30), 'x'));
        const inFlight = new Map<number, number>();
        let overlaps = 0;
        await consumeIn('g', async (m) => {
          const now = (inFlight.get(m.partition) ?? 0) + 1;
          inFlight.set(m.partition, now);
          if (now > 1) overlaps++;
          await new Promise((resolve) => setImmediate(resolve));
          inFlight.set(m.partition, now - 1);
        });
        expect(overlaps).toBe(0);
      });

      it('appends what the handler sends together with the commit of the consumed offset', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }, { name: topic('out'), partitions: 3 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd', 'e'], 'x'));
        await consumeIn('g', async (m, ctx) => {
          ctx.send([{ topic: topic('out'), key: `${m.key}-a`, value: m.value }, { topic: topic('out'), key: `${m.key}-b`, value: m.value }]);
        });
        const out = await collect(bus, topic('out'));
        expect(out.map((m) => m.key).sort()).toEqual(['a-a', 'a-b', 'b-a', 'b-b', 'c-a', 'c-b', 'd-a', 'd-b', 'e-a', 'e-b']);
      });

      it('retries a failed handler, and appends nothing a failed attempt queued', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        await bus.produce([{ topic: topic('in'), key: 'k', value: 1 }]);
        let calls = 0;
        await consumeIn('g', async (_m, ctx) => {
          calls++;
          ctx.send([{ topic: topic('out'), key: 'k', value: { attempt: calls } }]);
          if (calls === 1) throw new Error('transient');
        }, { maxAttempts: 3, retryBackoffMs: 1 });
        expect(calls).toBe(2);
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual([{ attempt: 2 }]);
        expect(await collect(bus, topic('in.dlq'))).toEqual([]);
      });

      it('dead-letters a message that keeps failing, with provenance, and moves on', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        await bus.produce([{ topic: topic('in'), key: 'poison', value: { n: 1 } }, { topic: topic('in'), key: 'good', value: { n: 2 } }]);
        const attempts = new Map<string, number>();
        await consumeIn('g', async (m, ctx) => {
          attempts.set(m.key, (attempts.get(m.key) ?? 0) + 1);
          ctx.send([{ topic: topic('out'), key: m.key, value: m.value }]);
          if (m.key === 'poison') throw new Error('cannot digest');
        }, { maxAttempts: 3, retryBackoffMs: 1 });
        expect(Object.fromEntries(attempts)).toEqual({ poison: 3, good: 1 });
        expect((await collect(bus, topic('out'))).map((m) => m.key)).toEqual(['good']);
        const dlq = await collect(bus, topic('in.dlq'));
        expect(dlq).toHaveLength(1);
        expect(dlq[0]).toMatchObject({
          key: 'poison', value: { n: 1 },
          headers: {
            'dlq.topic': topic('in'), 'dlq.partition': '0', 'dlq.offset': '0', 'dlq.error': 'cannot digest',
            'dlq.attempts': '3', 'dlq.group': group('g'),
          },
        });
      });

      it('runs onCommitted hooks in handling order once results commit, and onDiscarded for attempts that never will', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        const values = ['v1', 'v2', 'poison', 'v3', 'v4'];
        await bus.produce(values.map((value) => ({ topic: topic('in'), key: 'k', value })));
        const committed: string[] = [];
        const discarded: string[] = [];
        let failedOnce = false;
        await consumeIn('g', async (m, ctx) => {
          const value = String(m.value);
          ctx.onCommitted(() => committed.push(value));
          ctx.onDiscarded(() => discarded.push(value));
          ctx.send([{ topic: topic('out'), key: 'k', value }]);
          if (value === 'poison') throw new Error('cannot digest');
          if (value === 'v2' && !failedOnce) {
            failedOnce = true;
            throw new Error('transient');
          }
        }, { maxAttempts: 2, retryBackoffMs: 1 });
        expect(committed).toEqual(['v1', 'v2', 'v3', 'v4']);
        expect(discarded).toEqual(['v2', 'poison', 'poison']);
        // The hooks tell the truth: exactly the committed attempts' sends are in the log.
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual(committed);
        expect((await collect(bus, topic('in.dlq'))).map((m) => m.value)).toEqual(['poison']);
      });

      it('retries a dependency outage past maxAttempts instead of dead-lettering, until it passes', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        await bus.produce([{ topic: topic('in'), key: 'k', value: { n: 1 } }]);
        let attempts = 0;
        await consumeIn('g', async (m, ctx) => {
          attempts += 1;
          // The index or state store is down for the first 6 attempts (maxAttempts is 2).
          if (attempts <= 6) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'index down', { retriable: true });
          ctx.send([{ topic: topic('out'), key: m.key, value: m.value }]);
        }, { maxAttempts: 2, retryBackoffMs: 1 });
        expect(attempts).toBe(7);
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual([{ n: 1 }]);
        expect(await collect(bus, topic('in.dlq'))).toEqual([]);
      });

      it('gives every group every message, each with its own offsets', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        const a = recorder();
        const b = recorder();
        const subs = await Promise.all([subscribeIn('a', a.handler), subscribeIn('b', b.handler)]);
        await bus.produce(messagesTo(topic('in'), ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'], 'x'));
        await caughtUpIn('a');
        await caughtUpIn('b');
        await Promise.all(subs.map((sub) => sub.close()));
        expect(a.received.map(positionId).sort()).toEqual(b.received.map(positionId).sort());
        expect(a.received).toHaveLength(6);
      });

      it('splits partitions between members of a group, and survivors take over from the committed offsets', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 4 }]);
        const keys = keysCoveringPartitions(bus, topic('in'), 4, 8);
        const m1 = recorder();
        const m2 = recorder();
        const sub1 = await subscribeIn('g', m1.handler);
        const sub2 = await subscribeIn('g', m2.handler);
        await bus.produce(messagesTo(topic('in'), keys, 'first'));
        await caughtUpIn('g');
        const partitions1 = new Set(m1.received.map((m) => m.partition));
        const partitions2 = new Set(m2.received.map((m) => m.partition));
        expect(partitions1.size).toBeGreaterThan(0);
        expect(partitions2.size).toBeGreaterThan(0);
        expect([...partitions1].filter((p) => partitions2.has(p))).toEqual([]);

        await sub2.close();
        const before = m1.received.length;
        await bus.produce(messagesTo(topic('in'), keys, 'second'));
        await caughtUpIn('g');
        await sub1.close();
        expect(m1.received.slice(before).map((m) => m.value)).toEqual(expect.arrayContaining(valuesIn(keys, 'second')));
        const all = [...m1.received, ...m2.received].map(positionId);
        expect(new Set(all).size).toBe(all.length);
        expect(all).toHaveLength(2 * keys.length);
      });

      it('close waits for the in-flight handler to finish and commit', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        const started = deferred();
        const release = deferred();
        const sub = await subscribeIn('g', async (m, ctx) => {
          started.resolve();
          await release.promise;
          ctx.send([{ topic: topic('out'), key: m.key, value: 'handled' }]);
        });
        await bus.produce([{ topic: topic('in'), key: 'k', value: 1 }]);
        await started.promise;
        let closed = false;
        const closing = sub.close().then(() => { closed = true; });
        await new Promise((resolve) => setImmediate(resolve));
        expect(closed).toBe(false);
        release.resolve();
        await closing;
        expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual([1]);
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual(['handled']);
      });

      it('resumes a group after its last committed message when it subscribes again', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd'], 'one'));
        await consumeIn('g');
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd'], 'two'));
        const second = recorder();
        await consumeIn('g', second.handler);
        expect(second.received.map((m) => m.value)).toEqual(expect.arrayContaining(valuesIn(['a', 'b', 'c', 'd'], 'two')));
        expect(second.received).toHaveLength(4);
      });

      it('with fromBeginning: false, starts a new group at the end offsets of subscribe time', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c'], 'old'));
        const ends = await bus.endOffsets(topic('in'));
        const { received, handler } = recorder();
        const sub = await subscribeIn('g', handler, { fromBeginning: false });
        expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual(ends);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c'], 'new'));
        await caughtUpIn('g');
        await sub.close();
        expect(received.map((m) => m.value)).toEqual(expect.arrayContaining(valuesIn(['a', 'b', 'c'], 'new')));
        expect(received).toHaveLength(3);
      });
    });

    describe('lazy commits (lazyCommitMs)', () => {
      const quiet: MessageHandler = async () => undefined;
      /** Where the group stands against the topic's end, per partition. */
      const standing = async (groupName: string, name: string): Promise<{ committed: number[]; ends: number[] }> =>
        ({ committed: await bus.committedOffsets(group(groupName), topic(name)), ends: await bus.endOffsets(topic(name)) });

      it('commits the offsets of batches that sent nothing, without another message', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        const sub = await subscribeIn('g', quiet, { lazyCommitMs: 20 });
        const positions = await bus.produce([1, 2, 3].map((value) => ({ topic: topic('in'), key: 'k', value })));
        const last = positions.at(-1);
        if (last === undefined) throw new Error('no position');
        expect(await bus.waitForCommitted(group('g'), last, CONDITION_TIMEOUT_MS)).toBe(true);
        await sub.close();
      });

      it('commits held offsets with the next batch that sends, in the same transaction', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        const sub = await subscribeIn('g', async (m, ctx) => {
          if (m.value === 'send') ctx.send([{ topic: topic('out'), key: m.key, value: m.offset }]);
        }, { lazyCommitMs: 600_000 });
        const [, held] = await bus.produce(['a', 'b'].map((value) => ({ topic: topic('in'), key: 'k', value })));
        const [sending] = await bus.produce([{ topic: topic('in'), key: 'k', value: 'send' }]);
        if (sending === undefined || held === undefined) throw new Error('no position');
        // The hold outlasts the test: only the sending batch's commit can pass the quiet ones.
        expect(await bus.waitForCommitted(group('g'), sending, CONDITION_TIMEOUT_MS)).toBe(true);
        const { committed, ends } = await standing('g', 'in');
        expect(committed).toEqual(ends);
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual([sending.offset]);
        await sub.close();
      });

      it('commits what it holds when the subscription closes', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        const handled: unknown[] = [];
        const sub = await subscribeIn('g', async (m) => { handled.push(m.value); }, { lazyCommitMs: 600_000 });
        await bus.produce([1, 2, 3].map((value) => ({ topic: topic('in'), key: 'k', value })));
        await expect.poll(() => handled.length, { timeout: CONDITION_TIMEOUT_MS }).toBe(3);
        expect((await standing('g', 'in')).committed).toEqual([0]);
        await sub.close();
        const { committed, ends } = await standing('g', 'in');
        expect(committed).toEqual(ends);
      });

      it('still dead-letters a poison message that follows held ones, and moves past it', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        const sub = await subscribeIn('g', async (m) => {
          if (m.value === 'poison') throw new Error('cannot handle this one');
        }, { lazyCommitMs: 600_000, maxAttempts: 2, retryBackoffMs: 1 });
        const positions = await bus.produce(['a', 'b', 'poison'].map((value) => ({ topic: topic('in'), key: 'k', value })));
        const poison = positions.at(-1);
        if (poison === undefined) throw new Error('no position');
        expect(await bus.waitForCommitted(group('g'), poison, CONDITION_TIMEOUT_MS)).toBe(true);
        expect((await collect(bus, topic('in.dlq'))).map((m) => m.value)).toEqual(['poison']);
        await sub.close();
      });

      it('refuses a negative delay', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        await expect(subscribeIn('g', quiet, { lazyCommitMs: -1 })).rejects.toThrow(/lazyCommitMs/);
      });
    });

    describe('groups that never send, and transient groups', () => {
      it('with sends: false, refuses a handler\'s send: the message is retried, then dead-lettered, and nothing reaches the topic', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        await bus.produce([{ topic: topic('in'), key: 'k', value: 1 }, { topic: topic('in'), key: 'quiet', value: 2 }]);
        const handled: string[] = [];
        await consumeIn('g', async (m, ctx) => {
          handled.push(m.key);
          if (m.key === 'k') ctx.send([{ topic: topic('out'), key: 'k', value: 'leak' }]);
        }, { sends: false, maxAttempts: 2, retryBackoffMs: 1 });
        expect(handled).toEqual(['k', 'k', 'quiet']);
        expect(await collect(bus, topic('out'))).toEqual([]);
        const dlq = await collect(bus, topic('in.dlq'));
        expect(dlq.map((m) => [m.key, m.headers['dlq.attempts']])).toEqual([['k', '2']]);
        expect(dlq[0]?.headers['dlq.error']).toContain('sends: false');
      });

      it('refuses a transient group that could send, subscribing nothing', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        await expect(subscribeIn('t', async () => undefined, { transient: true })).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
        expect(await bus.committedOffsets(group('t'), topic('in'))).toEqual([0]);
      });

      it('deletes a transient group when it closes, refuses a second live subscription of its name, and starts a new one afresh', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd'], 'x'));
        const transient = { transient: true, sends: false } as const;
        const first = recorder();
        const sub = await subscribeIn('t', first.handler, transient);
        await caughtUpIn('t');
        await expect(subscribeIn('t', async () => undefined, transient)).rejects.toMatchObject({ code: 'MEM_CONFLICT' });
        await sub.close();
        expect(first.received).toHaveLength(4);
        // Gone with its offsets: the next subscriber of the name reads from the start again.
        expect(await bus.committedOffsets(group('t'), topic('in'))).toEqual([0, 0]);
        const second = recorder();
        await consumeIn('t', second.handler, transient);
        expect(second.received).toHaveLength(4);
        expect(await bus.committedOffsets(group('t'), topic('in'))).toEqual([0, 0]);
      });
    });

    describe('batch subscriptions', () => {
      it('hands a batch handler consecutive messages of one partition, in order, each exactly once, and commits their sends', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }, { name: topic('out'), partitions: 2 }]);
        const keys = keysCoveringPartitions(bus, topic('in'), 2, 40);
        await bus.produce(messagesTo(topic('in'), keys, 'x'));
        const batches: ConsumedMessage[][] = [];
        const sub = await bus.subscribe({
          groupId: group('batches'), topics: [topic('in')],
          batchHandler: async (messages, ctx) => {
            batches.push([...messages]);
            ctx.send(messages.map((m) => ({ topic: topic('out'), key: m.key, value: m.value })));
          },
        });
        await caughtUpIn('batches');
        await sub.close();
        for (const b of batches) {
          expect(new Set(b.map((m) => m.partition)).size).toBe(1);
          b.slice(1).forEach((m, i) => expect(m.offset).toBeGreaterThan(b[i]?.offset ?? Infinity));
        }
        const seen = batches.flat();
        expect(seen.map(positionId).sort()).toEqual((await collect(bus, topic('in'))).map(positionId).sort());
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual(expect.arrayContaining(seen.map((m) => m.value)));
        expect(await collect(bus, topic('out'))).toHaveLength(40);
      });

      it('dead-letters a poison message of a batch alone: its neighbours are handled and committed', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 1 }]);
        await bus.produce(Array.from({ length: 9 }, (_, i) => ({ topic: topic('in'), key: 'k', value: i === 4 ? 'poison' : i })));
        const sub = await bus.subscribe({
          groupId: group('poison'), topics: [topic('in')], maxAttempts: 2, retryBackoffMs: 1,
          batchHandler: async (messages, ctx) => {
            if (messages.some((m) => m.value === 'poison')) throw new Error('cannot handle this batch');
            ctx.send(messages.map((m) => ({ topic: topic('out'), key: m.key, value: m.value })));
          },
        });
        await caughtUpIn('poison');
        await sub.close();
        expect((await collect(bus, topic('out'))).map((m) => m.value)).toEqual([0, 1, 2, 3, 5, 6, 7, 8]);
        const dead = await collect(bus, topic('in.dlq'));
        expect(dead.map((m) => m.value)).toEqual(['poison']);
        expect(dead[0]?.headers['dlq.error']).toBe('cannot handle this batch');
      });

      it('a lingering batch subscription still hands over every message exactly once, in order, and catches up', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        const keys = keysCoveringPartitions(bus, topic('in'), 2, 10);
        const seen: ConsumedMessage[] = [];
        const sub = await bus.subscribe({
          groupId: group('linger'), topics: [topic('in')], lingerMs: 50,
          batchHandler: async (messages) => void seen.push(...messages),
        });
        for (let round = 0; round < 5; round += 1) await bus.produce(messagesTo(topic('in'), keys, `r${round}`));
        await caughtUpIn('linger');
        await sub.close();
        expect(seen.map(positionId).sort()).toEqual((await collect(bus, topic('in'))).map(positionId).sort());
        for (const list of byPartition(seen).values()) expect(list).toEqual([...list].sort((a, b) => a - b));
      });

      it('never hands a batch handler more than maxBatchMessages, and still every message once, in order', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        await bus.produce(Array.from({ length: 20 }, (_, i) => ({ topic: topic('in'), key: 'k', value: i })));
        const sizes: number[] = [];
        const seen: number[] = [];
        const sub = await bus.subscribe({
          groupId: group('small'), topics: [topic('in')], maxBatchMessages: 3, lingerMs: 1, lingerShare: 0.5,
          batchHandler: async (messages) => {
            sizes.push(messages.length);
            seen.push(...messages.map((m) => m.value as number));
          },
        });
        await caughtUpIn('small');
        await sub.close();
        expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i));
        expect(Math.max(...sizes)).toBeLessThanOrEqual(3);
      });

      it('refuses a maxBatchMessages or lingerShare out of range, subscribing nothing', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        const batchHandler = async () => undefined;
        for (const maxBatchMessages of [0, 8193, 1.5]) {
          await expect(bus.subscribe({ groupId: group('bad'), topics: [topic('in')], maxBatchMessages, batchHandler })).rejects.toThrow('maxBatchMessages');
        }
        for (const lingerShare of [0, 1.5, Number.NaN]) {
          await expect(bus.subscribe({ groupId: group('bad'), topics: [topic('in')], lingerMs: 10, lingerShare, batchHandler })).rejects.toThrow('lingerShare');
        }
      });

      it('builds sendWithPositions messages from where the attempt\'s own sends landed, in the same commit', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }, { name: topic('out'), partitions: 2 }, { name: topic('where'), partitions: 1 }]);
        const keys = keysCoveringPartitions(bus, topic('out'), 2, 3);
        await bus.produce([{ topic: topic('in'), key: 'k', value: 'go' }]);
        const sub = await bus.subscribe({
          groupId: group('positions'), topics: [topic('in')],
          handler: async (_message, ctx) => {
            ctx.send(keys.map((key, i) => ({ topic: topic('out'), key, value: i })));
            ctx.sendWithPositions((sent) => [{ topic: topic('where'), key: 'w', value: sent }]);
          },
        });
        await caughtUpIn('positions');
        await sub.close();
        const out = await collect(bus, topic('out'));
        const [where] = await collect(bus, topic('where'));
        const named = (where?.value as LogPosition[]).map(positionId).sort();
        expect(named).toEqual(out.map(positionId).sort());
      });
    });

    describe('offsets', () => {
      it('reports 0 for every partition of a group that never committed', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 3 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b'], 'x'));
        expect(await bus.committedOffsets(group('nobody'), topic('in'))).toEqual([0, 0, 0]);
      });

      it('waitForCommitted resolves true once the group commits past the position, false on timeout', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        const [position] = await bus.produce([{ topic: topic('in'), key: 'k', value: 1 }]);
        if (position === undefined) throw new Error('produce returned no position');
        expect(await bus.waitForCommitted(group('g'), position, 50)).toBe(false);
        const waiting = bus.waitForCommitted(group('g'), position, CONDITION_TIMEOUT_MS);
        const sub = await subscribeIn('g', async () => undefined);
        expect(await waiting).toBe(true);
        expect(await bus.waitForCommitted(group('g'), position, 0)).toBe(true);
        expect(await bus.waitForCommitted(group('g'), { ...position, offset: position.offset + 1 }, 50)).toBe(false);
        await sub.close();
      });

      it('resetGroup makes an idle group read everything again, leaving other groups alone', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd'], 'x'));
        await consumeIn('g');
        await consumeIn('other');
        await bus.resetGroup(group('g'));
        expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual([0, 0]);
        expect(await bus.committedOffsets(group('other'), topic('in'))).toEqual(await bus.endOffsets(topic('in')));
        const replay = recorder();
        await consumeIn('g', replay.handler);
        expect(replay.received).toHaveLength(4);
      });

      it('resetGroup refuses a group that still has subscriptions', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        await bus.produce([{ topic: topic('in'), key: 'k', value: 1 }]);
        const sub = await subscribeIn('g', async () => undefined);
        await caughtUpIn('g');
        await expect(bus.resetGroup(group('g'))).rejects.toThrow();
        await sub.close();
        expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual([1]);
      });
    });

    describe('setCommittedOffsets', () => {
      it('hands an idle group over at the given offsets: it reads on from there, nothing before', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
        await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd'], 'old'));
        const ends = await bus.endOffsets(topic('in'));
        await bus.setCommittedOffsets(group('g'), topic('in'), ends);
        expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual(ends);
        await bus.produce(messagesTo(topic('in'), ['e'], 'new'));
        const after = recorder();
        await consumeIn('g', after.handler);
        expect(after.received.map((m) => m.value)).toEqual(valuesIn(['e'], 'new'));
      });

      it('refuses a group that still has subscriptions, and leaves its offsets alone', async () => {
        await bus.ensureTopics([{ name: topic('in'), partitions: 1 }]);
        await bus.produce([{ topic: topic('in'), key: 'k', value: 1 }]);
        const sub = await subscribeIn('g', async () => undefined);
        await caughtUpIn('g');
        await expect(bus.setCommittedOffsets(group('g'), topic('in'), [0])).rejects.toMatchObject({ code: 'MEM_CONFLICT' });
        await sub.close();
        expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual([1]);
      });
    });

    it('keeps messages and committed offsets across a close and reopen of the store', async () => {
      const { reopen } = fixture;
      // Durability is part of the contract: an adapter that cannot be reopened fails, never skips.
      if (reopen === undefined) throw new Error(`${adapterName} provides no reopen(): durability cannot be shown`);
      await bus.ensureTopics([{ name: topic('in'), partitions: 2 }]);
      await bus.produce(messagesTo(topic('in'), ['a', 'b', 'c', 'd'], 'one'));
      await consumeIn('g');
      const before = await collect(bus, topic('in'));
      const committed = await bus.committedOffsets(group('g'), topic('in'));

      bus = await reopen();
      expect(await collect(bus, topic('in'))).toEqual(before);
      expect(await bus.committedOffsets(group('g'), topic('in'))).toEqual(committed);
      const after = recorder();
      const resumed = await subscribeIn('g', after.handler);
      await bus.produce(messagesTo(topic('in'), ['e'], 'two'));
      await caughtUpIn('g');
      await resumed.close();
      expect(after.received.map((m) => m.value)).toEqual(valuesIn(['e'], 'two'));
    });
  });
}
