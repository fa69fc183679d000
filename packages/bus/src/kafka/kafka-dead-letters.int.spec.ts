/**
 * What the broker refuses never stops a partition: results refused for their size take the retry
 * path of the message that sent them (then its dead letter), and a dead letter refused too is
 * skipped after a few tries — counted, and an ALERT without content — so the messages after it
 * are handled. Each test runs in its own namespace, deleted at the end.
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { engineEndpoint } from '@gm/testing/engines';
import type { BusLogger } from '../bus-logger.ts';
import type { Bus, ConsumedMessage, Subscription } from '../port.ts';
import { createKafkaBus } from './kafka-bus.ts';

const brokers = (): string[] => engineEndpoint('kafka').split(',');

describe('kafka bus: records the broker refuses', () => {
  let bus: Bus | undefined;
  let sub: Subscription | undefined;
  let prefix = '';
  const warnings: Array<{ obj: object; msg: string }> = [];
  const logger: BusLogger = { warn: (obj, msg) => warnings.push({ obj, msg }) };

  const open = async (specs: Parameters<Bus['ensureTopics']>[0]): Promise<Bus> => {
    prefix = `gm-spec-${randomUUID().slice(0, 8)}.`;
    warnings.length = 0;
    bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-dlq-spec', topicPrefix: prefix, logger });
    await bus.ensureTopics(specs);
    return bus;
  };

  afterEach(async () => {
    await sub?.close();
    await bus?.close();
    const admin = new Kafka({ clientId: 'gm-dlq-spec-cleanup', brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics });
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups);
    await admin.disconnect();
  });

  const collect = async (b: Bus, topic: string): Promise<ConsumedMessage[]> => {
    const out: ConsumedMessage[] = [];
    for await (const m of b.readAll(topic)) out.push(m);
    return out;
  };

  it('skips a message whose dead letter the broker refuses, with an ALERT and a count, and handles the next one', async () => {
    // The dead-letter topic takes less than the poison's dead letter weighs.
    const b = await open([{ name: 'in', partitions: 1, deadLetterConfig: { 'max.message.bytes': '10000' } }]);
    const secret = 'p'.repeat(50_000);
    const dropped: number[] = [];
    const handled: string[] = [];
    let nextHandled: () => void = () => undefined;
    const next = new Promise<void>((resolve) => (nextHandled = resolve));
    sub = await b.subscribe({
      groupId: 'g', topics: ['in'], maxAttempts: 2, retryBackoffMs: 1, sends: true,
      onDeadLetterDropped: (m) => dropped.push(m.offset),
      handler: async (m) => {
        if (m.value === secret) throw new Error('cannot digest');
        handled.push(String(m.value));
        nextHandled();
      },
    });
    const [poison] = await b.produce([{ topic: 'in', key: 'k', value: secret }]);
    await b.produce([{ topic: 'in', key: 'k', value: 'next' }]);
    await next;
    expect(handled).toEqual(['next']);
    expect(dropped).toEqual([poison?.offset]);
    const alerts = warnings.filter((w) => w.msg.startsWith('ALERT'));
    expect(alerts).toHaveLength(1);
    expect(JSON.stringify(alerts)).not.toContain('ppp');
    expect(await collect(b, 'in.dlq')).toEqual([]);
  });

  it('takes results the broker refuses for their size as the message\'s failure: retried, dead-lettered, and the partition goes on', async () => {
    // Sends to `out` up to 50,000 bytes are taken; the handler's send for `big` is over it.
    const b = await open([{ name: 'in', partitions: 1 }, { name: 'out', partitions: 1, config: { 'max.message.bytes': '50000' } }]);
    let nextHandled: () => void = () => undefined;
    const next = new Promise<void>((resolve) => (nextHandled = resolve));
    const deadLettered: number[] = [];
    sub = await b.subscribe({
      groupId: 'g', topics: ['in'], maxAttempts: 2, retryBackoffMs: 1,
      onDeadLettered: (m) => deadLettered.push(m.offset),
      handler: async (m, ctx) => {
        ctx.send([{ topic: 'out', key: 'k', value: m.value === 'big' ? 'x'.repeat(60_000) : `echo ${String(m.value)}` }]);
        if (m.value === 'after') ctx.onCommitted(nextHandled);
      },
    });
    const positions = await b.produce([
      { topic: 'in', key: 'k', value: 'before' }, { topic: 'in', key: 'k', value: 'big' }, { topic: 'in', key: 'k', value: 'after' },
    ]);
    await next;
    expect((await collect(b, 'out')).map((m) => m.value)).toEqual(['echo before', 'echo after']);
    expect(deadLettered).toEqual([positions[1]?.offset]);
    const [letter] = await collect(b, 'in.dlq');
    expect(letter?.value).toBe('big');
    expect(letter?.headers['dlq.error']).toContain('MESSAGE_TOO_LARGE');
  });

  it('refuses a send over the size of one message when it is made, so the handler fails, not the commit', async () => {
    const b = await open([{ name: 'in', partitions: 1 }, { name: 'out', partitions: 1 }]);
    let nextHandled: () => void = () => undefined;
    const next = new Promise<void>((resolve) => (nextHandled = resolve));
    sub = await b.subscribe({
      groupId: 'g', topics: ['in'], maxAttempts: 2, retryBackoffMs: 1,
      handler: async (m, ctx) => {
        ctx.send([{ topic: 'out', key: 'k', value: m.value === 'huge' ? 'x'.repeat(1_100_000) : 'fine' }]);
        if (m.value === 'after') ctx.onCommitted(nextHandled);
      },
    });
    await b.produce([{ topic: 'in', key: 'k', value: 'huge' }, { topic: 'in', key: 'k', value: 'after' }]);
    await next;
    expect((await collect(b, 'out')).map((m) => m.value)).toEqual(['fine']);
    const [letter] = await collect(b, 'in.dlq');
    expect(letter?.headers['dlq.error']).toMatch(/over the limit of \d+ for one message/);
    await expect(b.produce([{ topic: 'out', key: 'k', value: 'x'.repeat(1_100_000) }])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
  });
});
