import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Subscription } from '@gm/bus';
import { MemoryEvent, TOPICS, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { openEmbeddedFixture, writeMemoryCommand, type EmbeddedFixture } from '@gm/testing';
import { startWriteAdmission } from '@gm/write-admission';
import { CommandGateway, READ_YOUR_WRITES_GROUPS } from './command-gateway.ts';

const silent = () => createLogger({ name: 'spec', level: 'silent' });

/**
 * The gateway against the real embedded bus and the real write-admission; the two groups it
 * waits for are played by the spec, so it decides how far they get.
 */
describe('command gateway: read-your-writes on the write\'s own position', () => {
  let fx: EmbeddedFixture;
  let admission: ServiceHandle;
  let gateway: CommandGateway;
  const groups: Subscription[] = [];
  /** Record ids whose events the projection groups hold back until released. */
  let held: Set<string>;
  let release: () => void;
  let released: Promise<void>;

  beforeEach(async () => {
    held = new Set();
    released = new Promise<void>((resolve) => (release = resolve));
    fx = await openEmbeddedFixture({ partitions: 2 });
    admission = await startWriteAdmission({
      bus: fx.bus, log: silent(), metrics: createMetrics(), decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
      snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 100_000 },
    });
    for (const groupId of READ_YOUR_WRITES_GROUPS) {
      groups.push(await fx.bus.subscribe({
        groupId, topics: [TOPICS.events],
        handler: async (message) => {
          const event = MemoryEvent.parse(message.value);
          if (event.type === 'MemoryWritten' && held.has(event.data.record.id)) await released;
        },
      }));
    }
    gateway = new CommandGateway(fx.bus, { instanceId: 'spec', replyTimeoutMs: 10_000, readYourWritesTimeoutMs: 300 });
    await gateway.start();
  });

  afterEach(async () => {
    release();
    await gateway.close();
    for (const g of groups.splice(0)) await g.close();
    await admission.close();
    await fx.close();
  });

  const write = (id: string) =>
    writeMemoryCommand({ commandId: `cmd-${id}`, tenantId: 'acme', subjectId: 'subj-1', now: fx.clock.iso() }, { id, content: `note ${id}` });

  it('confirms a write once both groups passed its own events, even while a later write of the partition is stuck', async () => {
    held.add('rec-later');
    // Sent together: the later write's events land right behind the first one's on the same
    // partition and are never folded. Waiting for the partition's end would time out both.
    const [first, later] = await Promise.all([gateway.send(write('rec-first')), gateway.send(write('rec-later'))]);
    expect(first).toMatchObject({ id: 'rec-first', version: 1, status: 'active', readYourWrites: true });
    expect(later).toMatchObject({ id: 'rec-later', version: 1, readYourWrites: false });
    const events = (await fx.readTopic(TOPICS.events)).map((m) => MemoryEvent.parse(m.value));
    expect(events.map((e) => (e.type === 'MemoryWritten' ? e.data.record.id : e.type))).toEqual(['rec-first', 'rec-later']);
  });

  it('says pending, not confirmed, when the projections have not folded the write when the wait ends', async () => {
    held.add('rec-stuck');
    const result = await gateway.send(write('rec-stuck'));
    expect(result).toMatchObject({ id: 'rec-stuck', status: 'active', readYourWrites: false });
    // Accepted and durable all the same: the event is on the log.
    const events = (await fx.readTopic(TOPICS.events)).map((m) => MemoryEvent.parse(m.value));
    expect(events.filter((e) => e.type === 'MemoryWritten' && e.data.record.id === 'rec-stuck')).toHaveLength(1);
  });

  it('carries the position of its last event in the reply', async () => {
    await gateway.send(write('rec-a'));
    const replies = await fx.readTopic(TOPICS.replies);
    const events = await fx.readTopic(TOPICS.events);
    const lastEvent = events.at(-1);
    expect(replies.at(-1)?.value).toMatchObject({ outcome: 'accepted', eventsAt: { partition: lastEvent?.partition, offset: lastEvent?.offset } });
  });
});

/**
 * While the cluster moves leaders or a broker hangs, the client's produce can retry for longer
 * than any caller should wait: the gateway answers MEM_TIMEOUT (a 503) once the reply timeout
 * has passed, whether or not the append lands later (docs/reliability.md "The fault suite").
 */
describe('command gateway: an append that does not complete in time', () => {
  it('answers MEM_TIMEOUT, retriable, for a write and for an asynchronous write', async () => {
    const fx = await openEmbeddedFixture({ partitions: 2 });
    // The bus as a hung broker leaves it: appends to memory.commands never complete.
    const hung = new Proxy(fx.bus, {
      get: (target, property, receiver) => (property === 'produce' ? () => new Promise(() => undefined) : Reflect.get(target, property, receiver)),
    });
    const gateway = new CommandGateway(hung, { instanceId: 'spec-hung', replyTimeoutMs: 200, readYourWritesTimeoutMs: 200 });
    await gateway.start();
    try {
      const command = writeMemoryCommand({ commandId: 'cmd-hung', tenantId: 'acme', subjectId: 'subj-1', now: fx.clock.iso() }, { id: 'rec-hung', content: 'note' });
      await expect(gateway.send(command)).rejects.toMatchObject({ code: 'MEM_TIMEOUT', retriable: true });
      await expect(gateway.post([command])).rejects.toMatchObject({ code: 'MEM_TIMEOUT', retriable: true });
    } finally {
      await gateway.close();
      await fx.close();
    }
  });
});
