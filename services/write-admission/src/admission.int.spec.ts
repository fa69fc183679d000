import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { subscribeToMemoryEvents, type ConsumedMessage, type LogPosition, type OutgoingMessage, type ProcessContext } from '@gm/bus';
import {
  CommandReply, MemoryCommand, MemoryEvent, TOPICS, dlqTopic, subjectKey, type ServiceHandle,
} from '@gm/contracts';
import { DEFAULT_TTL_POLICY, type DecideContext } from '@gm/domain';
import { createLogger, createMetrics, type Metrics } from '@gm/observability';
import {
  LogSink, eventually, openEmbeddedFixture, sha256Hex, writeMemoryCommand, type EmbeddedFixture,
} from '@gm/testing/embedded-fixture';
import { WRITE_ADMISSION_GROUP, WriteAdmission, startWriteAdmission, type SnapshotOptions } from './admission.ts';

const TENANT = 'acme';
const DECIDE: DecideContext = { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 24 * 3_600_000 };
const WAIT_MS = 10_000;

/** The context a bus gives one handler attempt, with the bus's side played by the test. */
function attemptContext(): { ctx: ProcessContext; sent: OutgoingMessage[]; commit: () => void; discard: () => void } {
  const sent: OutgoingMessage[] = [];
  const committed: Array<() => void> = [];
  const discarded: Array<() => void> = [];
  return {
    ctx: {
      send: (messages) => sent.push(...messages),
      // As the bus does at commit: built from where the earlier sends landed (here: one partition, in order).
      sendWithPositions: (build) => sent.push(...build(sent.map((m, offset) => ({ topic: m.topic, partition: 0, offset })))),
      onCommitted: (fn) => committed.push(fn),
      onDiscarded: (fn) => discarded.push(fn),
    },
    sent,
    commit: () => committed.forEach((fn) => fn()),
    discard: () => discarded.forEach((fn) => fn()),
  };
}

describe('write-admission over the embedded bus', () => {
  let fx: EmbeddedFixture;
  let logs: LogSink;
  let metrics: Metrics;
  let admission: ServiceHandle | undefined;

  /** The snapshot store every instance of the test shares, as services share Redis. */
  const snapshots = (options: Partial<SnapshotOptions> = {}): SnapshotOptions => ({
    store: fx.state.admission, intervalMs: 60_000, maxEntries: 100_000, ...options,
  });
  const start = async (): Promise<void> => {
    admission = await startWriteAdmission({
      bus: fx.bus, metrics, decide: DECIDE, snapshots: snapshots(), log: createLogger({ name: 'write-admission', level: 'info', destination: logs }),
    });
  };
  const stop = async (): Promise<void> => {
    await admission?.close();
    admission = undefined;
  };

  beforeEach(async () => {
    fx = await openEmbeddedFixture({ partitions: 4 });
    logs = new LogSink();
    metrics = createMetrics();
  });

  afterEach(async () => {
    await stop();
    await fx.close();
  });

  const meta = (commandId: string, subjectId: string, extra: { idempotencyKey?: string } = {}) => ({
    commandId, tenantId: TENANT, subjectId, now: fx.clock.iso(), ...extra,
  });
  const keyOf = (command: MemoryCommand): string => subjectKey(command.metadata.tenantId, command.metadata.subjectId);

  /** Appends raw values under one key, in order; returns their positions. */
  const produce = async (key: string, values: unknown[]): Promise<LogPosition[]> =>
    fx.bus.produce(values.map((value) => ({ topic: TOPICS.commands, key, value })));

  const processed = async (position: LogPosition | undefined): Promise<void> => {
    if (position === undefined) throw new Error('nothing was produced');
    expect(await fx.bus.waitForCommitted(WRITE_ADMISSION_GROUP, position, WAIT_MS)).toBe(true);
  };

  /** Sends commands (each under its own subject key) and waits until write-admission committed them. */
  const send = async (...commands: MemoryCommand[]): Promise<void> => {
    const positions = await fx.bus.produce(commands.map((c) => ({ topic: TOPICS.commands, key: keyOf(c), value: c })));
    for (const p of positions) await processed(p);
  };

  const replies = async (): Promise<CommandReply[]> =>
    (await fx.readTopic(TOPICS.replies)).map((m) => CommandReply.parse(m.value));
  const replyTo = async (commandId: string): Promise<CommandReply | undefined> =>
    (await replies()).find((r) => r.commandId === commandId);
  const events = async (): Promise<MemoryEvent[]> => (await fx.readTopic(TOPICS.events)).map((m) => MemoryEvent.parse(m.value));
  /** Where a command's last event landed: what its accepted reply must name. */
  const lastEventAt = async (commandId: string): Promise<{ partition: number; offset: number } | undefined> => {
    const last = (await fx.readTopic(TOPICS.events)).filter((m) => MemoryEvent.parse(m.value).metadata.commandId === commandId).at(-1);
    return last === undefined ? undefined : { partition: last.partition, offset: last.offset };
  };
  const eventsOf = async (commandId: string): Promise<MemoryEvent[]> =>
    (await events()).filter((e) => e.metadata.commandId === commandId);
  const counter = async (name: string): Promise<string> => metrics.registry.getSingleMetricAsString(name);

  it('dead-letters malformed commands with provenance, rejects those with a readable commandId, and keeps going', async () => {
    await start();
    const key = subjectKey(TENANT, 'cust-1');
    const valid = writeMemoryCommand(meta('cmd-ok', 'cust-1'), { id: 'mem-ok', content: 'Customer 1 prefers email' });
    const noMetadata = { type: 'WriteMemory', data: valid.data };
    const unknownType = { type: 'EraseEverything', data: {}, metadata: { ...valid.metadata, commandId: 'cmd-bogus' } };
    const notACommand = 'not even an object';
    const positions = await produce(key, [noMetadata, unknownType, notACommand, valid]);
    await processed(positions.at(-1));

    const dlq = await fx.readTopic(dlqTopic(TOPICS.commands));
    expect(dlq.map((m) => m.value)).toEqual([noMetadata, unknownType, notACommand]);
    dlq.forEach((m, i) => {
      const original = positions[i];
      expect(m.key).toBe(key);
      expect(m.headers).toMatchObject({
        'dlq.topic': TOPICS.commands,
        'dlq.partition': String(original?.partition),
        'dlq.offset': String(original?.offset),
        'dlq.attempts': '1',
        'dlq.group': WRITE_ADMISSION_GROUP,
      });
      expect(m.headers['dlq.error']).toMatch(/^invalid command: /);
    });
    expect(dlq[0]?.headers['dlq.error']).toContain('metadata');

    // Only the malformed command whose commandId could be read gets an answer.
    expect(await replies()).toEqual([
      { commandId: 'cmd-bogus', outcome: 'rejected', code: 'MEM_VALIDATION', detail: 'invalid command', retriable: false },
      { commandId: 'cmd-ok', outcome: 'accepted', result: { id: 'mem-ok', version: 1, status: 'active' }, eventsAt: await lastEventAt('cmd-ok') },
    ]);
    expect((await events()).map((e) => `${e.type}:${e.metadata.commandId}`)).toEqual(['MemoryWritten:cmd-ok']);
    expect(await counter('gm_dead_letters_total')).toContain('gm_dead_letters_total{topic="memory.commands"} 3');
    // Dead-lettered at once, not after bus retries.
    expect(fx.busWarnings).toEqual([]);
  });

  it('rejects a WriteMemory whose contentHash does not match its content, with no event', async () => {
    await start();
    const forged = writeMemoryCommand(meta('cmd-forged', 'cust-2'), {
      id: 'mem-h', content: 'Customer 2 ships to Lisbon', contentHash: sha256Hex('Customer 2 ships to Porto'),
    });
    await send(forged);

    expect(await replyTo('cmd-forged')).toMatchObject({ outcome: 'rejected', code: 'MEM_VALIDATION', retriable: false });
    expect(await events()).toEqual([]);
    expect(await fx.readTopic(dlqTopic(TOPICS.commands))).toEqual([]);
    expect(await counter('gm_commands_rejected_total')).toContain('gm_commands_rejected_total{code="MEM_VALIDATION"} 1');

    // Nothing was recorded: the honest write of the same id is a new record.
    await send(writeMemoryCommand(meta('cmd-honest', 'cust-2'), { id: 'mem-h', content: 'Customer 2 ships to Lisbon' }));
    expect(await replyTo('cmd-honest')).toMatchObject({ outcome: 'accepted', result: { id: 'mem-h', version: 1 } });
  });

  it('appends the events and the reply of a command together, with eventIds `${commandId}:${i}`', async () => {
    await start();
    await send(writeMemoryCommand(meta('cmd-a', 'cust-3'), { id: 'pref-a', kind: 'preference', content: 'Customer 3 prefers email' }));
    await stop();

    // A correction emits two events (written + superseded). It waits on the log while write-admission is down.
    const correction = writeMemoryCommand(meta('cmd-b', 'cust-3'), {
      id: 'pref-b', kind: 'preference', supersedesId: 'pref-a', content: 'Customer 3 now prefers phone calls',
    });
    const [position] = await fx.bus.produce([{ topic: TOPICS.commands, key: keyOf(correction), value: correction }]);
    if (position === undefined) throw new Error('nothing was produced');
    const committed = async () => ((await fx.bus.committedOffsets(WRITE_ADMISSION_GROUP, TOPICS.commands))[position.partition] ?? 0) > position.offset;

    // Observed in this order, each fact implies the next: the commit, the reply and the
    // events land in one transaction, so no reader ever sees one without the others.
    const observe = async () => {
      const committedBefore = await committed();
      const replyBefore = (await replyTo('cmd-b')) !== undefined;
      const eventCount = (await eventsOf('cmd-b')).length;
      const replyAfter = (await replyTo('cmd-b')) !== undefined;
      const committedAfter = await committed();
      if (committedBefore) expect(replyBefore).toBe(true);
      if (replyBefore) expect(eventCount).toBe(2);
      if (eventCount > 0) expect(replyAfter).toBe(true);
      if (replyAfter) expect(committedAfter).toBe(true);
      return committedAfter;
    };
    expect(await observe()).toBe(false);
    await start();
    // Polled every millisecond: each observation checks the order of the facts on the way.
    await eventually('write-admission to process the correction', observe, WAIT_MS, 1);

    // The reply names the last of its two events (the supersession).
    expect(await replyTo('cmd-b')).toEqual({
      commandId: 'cmd-b', outcome: 'accepted', result: { id: 'pref-b', version: 1, status: 'active' }, eventsAt: await lastEventAt('cmd-b'),
    });
    const written = await eventsOf('cmd-b');
    expect(written.map((e) => [e.type, e.metadata.eventId])).toEqual([
      ['MemoryWritten', 'cmd-b:0'],
      ['MemorySuperseded', 'cmd-b:1'],
    ]);
    expect(written[1]?.data).toEqual({ id: 'pref-a', version: 2, supersededById: 'pref-b' });
    expect((await eventsOf('cmd-a')).map((e) => e.metadata.eventId)).toEqual(['cmd-a:0']);
  });

  it('after a restart on the same bus file, rebuilt state rejects a stale expectedVersion and replays an idempotency key', async () => {
    await start();
    const first = writeMemoryCommand(meta('cmd-1', 'cust-4', { idempotencyKey: 'idem-1' }), { id: 'mem-r', content: 'Customer 4 lives in Oslo' });
    await send(first);
    const firstReply = await replyTo('cmd-1');
    expect(firstReply).toEqual({ commandId: 'cmd-1', outcome: 'accepted', result: { id: 'mem-r', version: 1, status: 'active' }, eventsAt: await lastEventAt('cmd-1') });

    await stop();
    await fx.reopen();
    fx.clock.advance(60_000);
    await start();

    // The client retries with the same key (a new commandId): the first result, no second record.
    const retry = writeMemoryCommand(meta('cmd-2', 'cust-4', { idempotencyKey: 'idem-1' }), { id: 'mem-r', content: 'Customer 4 lives in Oslo' });
    const stale = writeMemoryCommand(meta('cmd-3', 'cust-4'), { id: 'mem-r', content: 'Customer 4 lives in Bergen', expectedVersion: 0 });
    const current = writeMemoryCommand(meta('cmd-4', 'cust-4'), { id: 'mem-r', content: 'Customer 4 lives in Bergen', expectedVersion: 1 });
    await send(retry, stale, current);

    // An idempotent retry appends nothing, so its reply names no position of its own.
    expect(await replyTo('cmd-2')).toEqual({ commandId: 'cmd-2', outcome: 'accepted', result: { id: 'mem-r', version: 1, status: 'active' } });
    expect(await eventsOf('cmd-2')).toEqual([]);
    expect(await replyTo('cmd-3')).toMatchObject({ outcome: 'rejected', code: 'MEM_CONFLICT' });
    expect(await eventsOf('cmd-3')).toEqual([]);
    expect(await replyTo('cmd-4')).toEqual({ commandId: 'cmd-4', outcome: 'accepted', result: { id: 'mem-r', version: 2, status: 'active' }, eventsAt: await lastEventAt('cmd-4') });
    expect((await events()).map((e) => `${e.type}:${e.metadata.commandId}`)).toEqual(['MemoryWritten:cmd-1', 'MemoryWritten:cmd-4']);
  });

  it('stops at an event it cannot read, as every reader of memory.events does: never skipped, never dead-lettered', async () => {
    await start();
    await send(writeMemoryCommand(meta('cmd-1', 'cust-9'), { id: 'mem-u1', content: 'Customer 9 prefers tea' }));
    // What a newer write-admission might write: a type this version does not know.
    const [unknown] = await fx.bus.produce([{
      topic: TOPICS.events, key: subjectKey(TENANT, 'cust-9'),
      value: { type: 'MemoryAnnotated', data: { id: 'mem-u1', version: 1 }, metadata: { ...meta('cmd-x', 'cust-9'), eventId: 'cmd-x:0' } },
    }]);
    if (unknown === undefined) throw new Error('nothing was produced');
    const stoppedAt = (groupId: string) => eventually(`${groupId} retrying at the unknown event`, async () =>
      fx.busWarnings.some((w) => w.msg === 'bus handler failed; retrying' && JSON.stringify(w.detail).includes(`"groupId":"${groupId}"`)
        && JSON.stringify(w.detail).includes(`@${unknown.offset} (type \\"MemoryAnnotated\\") is not a memory event this version reads`)));

    // A consumer group (the projector's helper): handles what came before, then retries the unknown one.
    const handled: string[] = [];
    const reader = await subscribeToMemoryEvents(fx.bus, 'spec-reader', async (event) => void handled.push(event.type));
    try {
      await stoppedAt('spec-reader');
      expect(handled).toEqual(['MemoryWritten']);
      expect((await fx.bus.committedOffsets('spec-reader', TOPICS.events))[unknown.partition]).toBe(unknown.offset);
    } finally {
      await reader.close();
    }

    // write-admission folds the log when it starts: it refuses to start past the same event,
    // naming where it is, rather than decide on a state that lacks it.
    await stop();
    await fx.reopen();
    await expect(start()).rejects.toThrow(`memory.events[${unknown.partition}]@${unknown.offset} (type "MemoryAnnotated") is not a memory event this version reads`);
    expect(await fx.readTopic(dlqTopic(TOPICS.events))).toEqual([]);
  });

  it('processes two subjects of one partition in order, each subject in command order', async () => {
    await start();
    const subjects = Array.from({ length: 64 }, (_, i) => `cust-p${i}`);
    const partitionOf = (s: string) => fx.bus.partitionFor(TOPICS.commands, subjectKey(TENANT, s));
    const a = subjects[0] ?? 'cust-p0';
    const b = subjects.find((s) => s !== a && partitionOf(s) === partitionOf(a));
    if (b === undefined) throw new Error('no second subject shares the partition');

    const write = (id: string, subject: string, n: number, expectedVersion: number) =>
      writeMemoryCommand(meta(`cmd-${id}-${n}`, subject), { id, content: `note ${n} about ${subject}`, expectedVersion });
    // Each update names the version the previous command of its subject produced: any
    // reordering within a subject would surface as a conflict.
    const commands = [
      write('a-1', a, 1, 0), write('b-1', b, 1, 0), write('a-1', a, 2, 1), write('b-1', b, 2, 1),
      write('a-1', a, 3, 2), write('b-1', b, 3, 2), write('b-1', b, 4, 3),
    ];
    const positions = await fx.bus.produce(commands.map((c) => ({ topic: TOPICS.commands, key: keyOf(c), value: c })));
    expect(new Set(positions.map((p) => p.partition)).size).toBe(1);
    await processed(positions.at(-1));

    // Replies are keyed by commandId, so they spread over partitions: compare as a set.
    const answered = await replies();
    expect(answered.map((r) => r.commandId).sort()).toEqual(commands.map((c) => c.metadata.commandId).sort());
    expect(answered.filter((r) => r.outcome !== 'accepted')).toEqual([]);

    const logged = await fx.readTopic(TOPICS.events);
    for (const [subject, id, count] of [[a, 'a-1', 3], [b, 'b-1', 4]] as const) {
      const ofSubject = logged.filter((m) => m.key === subjectKey(TENANT, subject)).map((m) => MemoryEvent.parse(m.value));
      expect(ofSubject.map((e) => e.metadata.commandId)).toEqual(Array.from({ length: count }, (_, i) => `cmd-${id}-${i + 1}`));
      expect(ofSubject.map((e) => (e.type === 'MemoryWritten' ? e.data.record.version : -1))).toEqual(
        Array.from({ length: count }, (_, i) => i + 1),
      );
    }
  });

  // §4: a member that takes over a partition from a peer must decide on the partition's
  // current state, not on what it knew at its own start (it folds memory.events first).
  it('decides on current state after taking over a partition from a peer of its group', async () => {
    // Join order fixes ownership: with two members, the second owns the odd partitions.
    await start();
    const peer = await startWriteAdmission({
      bus: fx.bus, metrics, decide: DECIDE, snapshots: snapshots(), log: createLogger({ name: 'write-admission-2', level: 'info', destination: logs }),
    });
    const subject = Array.from({ length: 64 }, (_, i) => `cust-r${i}`).find((s) => fx.bus.partitionFor(TOPICS.commands, subjectKey(TENANT, s)) % 2 === 1);
    if (subject === undefined) throw new Error('no subject on an odd partition');
    try {
      await send(writeMemoryCommand(meta('cmd-peer', subject), { id: 'mem-t', content: 'written by the peer' }));
      expect(await replyTo('cmd-peer')).toMatchObject({ outcome: 'accepted', result: { version: 1 } });
    } finally {
      await peer.close();
    }

    await send(writeMemoryCommand(meta('cmd-stale', subject), { id: 'mem-t', content: 'a stale write', expectedVersion: 0 }));
    expect(await replyTo('cmd-stale')).toMatchObject({ outcome: 'rejected', code: 'MEM_CONFLICT' });
    expect(await eventsOf('cmd-stale')).toEqual([]);
  });

  // memory.replies carries CommandReply messages only, keyed by valid ids, even when a
  // malformed command names an invalid commandId (spaces, 300 characters).
  it('keeps memory.replies within the CommandReply contract when the commandId itself is invalid', async () => {
    await start();
    const key = subjectKey(TENANT, 'cust-9');
    const bad = { type: 'WriteMemory', data: {}, metadata: { commandId: `has spaces ${'x'.repeat(300)}` } };
    const positions = await produce(key, [bad]);
    await processed(positions.at(-1));
    expect(await fx.readTopic(dlqTopic(TOPICS.commands))).toHaveLength(1);
    const raw = await fx.readTopic(TOPICS.replies);
    expect(raw.filter((m) => !CommandReply.safeParse(m.value).success)).toEqual([]);
  });

  // The bus commits several commands of a partition in one transaction, so a command is
  // decided on its uncommitted predecessors' provisional state. Here the test plays the bus,
  // to make such a transaction fail, then lose the partition to a peer and get it back.
  it('drops the provisional state of a transaction that did not commit: redelivered or after a takeover, commands are decided on the committed log', async () => {
    const open = async (name: string): Promise<WriteAdmission> => {
      const admission = new WriteAdmission({ bus: fx.bus, metrics, decide: DECIDE, snapshots: snapshots(), log: createLogger({ name, level: 'info', destination: logs }) });
      await admission.rebuild();
      return admission;
    };
    const update = (n: number) =>
      writeMemoryCommand(meta(`cmd-p${n}`, 'cust-6'), { id: 'mem-p', content: `Customer 6 note ${n}`, expectedVersion: n - 1 });
    const positions = await fx.bus.produce([1, 2, 3].map((n) => ({ topic: TOPICS.commands, key: subjectKey(TENANT, 'cust-6'), value: update(n) })));
    const messages: ConsumedMessage[] = [];
    for await (const m of fx.bus.readPartition(TOPICS.commands, positions[0]?.partition ?? 0, 0)) messages.push(m);
    const [m1, m2, m3] = messages;
    if (m1 === undefined || m2 === undefined || m3 === undefined) throw new Error('the commands are not in the log');
    const handle = async (admission: WriteAdmission, ...batch: ConsumedMessage[]) => {
      const attempts = [];
      for (const m of batch) {
        const attempt = attemptContext();
        await admission.handle(m, attempt.ctx);
        attempts.push(attempt);
      }
      return attempts;
    };
    const replies = (attempts: Array<{ sent: OutgoingMessage[] }>) => attempts.map((a) => a.sent.find((m) => m.topic === TOPICS.replies)?.value);

    const admission = await open('write-admission');
    const failed = await handle(admission, m1, m2);
    // One transaction: the second command was decided on the first's provisional version 1.
    expect(replies(failed)).toMatchObject([{ outcome: 'accepted', result: { version: 1 } }, { outcome: 'accepted', result: { version: 2 } }]);
    // Its commit fails: nothing reaches the log, the bus discards both and hands them over again.
    failed.forEach((a) => a.discard());
    const redelivered = await handle(admission, m1);
    expect(redelivered.map((a) => a.sent)).toEqual((await handle(await open('fresh'), m1)).map((a) => a.sent));

    // Before that one commits, a peer takes the partition over (our commit is fenced) and commits both.
    redelivered.forEach((a) => a.discard());
    const peer = await handle(await open('peer'), m1, m2);
    await fx.bus.produce(peer.flatMap((a) => a.sent));
    peer.forEach((a) => a.commit());

    // Back here, the next command builds on the peer's committed log, not on stale provisional state.
    const [afterTakeover] = await handle(admission, m3);
    expect(replies([afterTakeover ?? attemptContext()])).toMatchObject([{ outcome: 'accepted', result: { version: 3 } }]);
    expect(afterTakeover?.sent).toEqual((await handle(await open('fresh-2'), m3))[0]?.sent);
  });

  // A batch changes the drafts it made in place (one copy per subject per batch, not per
  // command); a later batch decided on an earlier one's uncommitted state must copy it, or its
  // events would reach the committed state with the earlier batch's commit.
  it('a batch decided on an uncommitted batch\'s state leaves no trace when it is discarded and the earlier one commits', async () => {
    const update = (n: number) =>
      writeMemoryCommand(meta(`cmd-q${n}`, 'cust-7'), { id: 'mem-q', content: `Customer 7 note ${n}`, expectedVersion: n - 1 });
    const positions = await fx.bus.produce([1, 2, 3, 4].map((n) => ({ topic: TOPICS.commands, key: subjectKey(TENANT, 'cust-7'), value: update(n) })));
    const messages: ConsumedMessage[] = [];
    for await (const m of fx.bus.readPartition(TOPICS.commands, positions[0]?.partition ?? 0, 0)) messages.push(m);
    const [m1, m2, m3, m4] = messages;
    if (m1 === undefined || m2 === undefined || m3 === undefined || m4 === undefined) throw new Error('the commands are not in the log');
    const versions = (attempt: { sent: OutgoingMessage[] }) =>
      attempt.sent.filter((m) => m.topic === TOPICS.replies).map((m) => (m.value as { result?: { version?: number } }).result?.version);
    const admission = new WriteAdmission({ bus: fx.bus, metrics, decide: DECIDE, snapshots: snapshots(), log: createLogger({ name: 'write-admission', level: 'info', destination: logs }) });
    await admission.rebuild();

    const first = attemptContext();
    await admission.handleBatch([m1, m2], first.ctx);
    // Handed over before the first batch committed: decided on its provisional versions.
    const second = attemptContext();
    await admission.handleBatch([m3, m4], second.ctx);
    expect([versions(first), versions(second)]).toEqual([[1, 2], [3, 4]]);

    // The first batch commits; the second is aborted and the bus hands it over again.
    await fx.bus.produce(first.sent);
    first.commit();
    second.discard();
    const again = attemptContext();
    await admission.handleBatch([m3, m4], again.ctx);
    expect(versions(again)).toEqual([3, 4]);
    // Decided again, not answered from idempotency slots the aborted batch would have left.
    const events = again.sent.filter((m) => m.topic === TOPICS.events).map((m) => m.value as { type: string; data: { record: { version: number } } });
    expect(events.map((e) => [e.type, e.data.record.version])).toEqual([['MemoryWritten', 3], ['MemoryWritten', 4]]);
  });

  /** write-admission without its start-up wrapper: the test decides when it stores its snapshots. */
  const run = async (options: Partial<SnapshotOptions> = {}) => {
    const instance = new WriteAdmission({
      bus: fx.bus, metrics, decide: DECIDE, snapshots: snapshots(options), log: createLogger({ name: 'write-admission', level: 'info', destination: logs }),
    });
    const folded = await instance.rebuild();
    const sub = await fx.bus.subscribe({ groupId: WRITE_ADMISSION_GROUP, topics: [TOPICS.commands], batchHandler: instance.handleBatch });
    return { instance, folded, stop: () => sub.close() };
  };

  it('restarts from its snapshots: folds only the events past the stored checkpoint, and decides as if it had folded the whole log', async () => {
    const first = await run();
    await send(writeMemoryCommand(meta('cmd-s1', 'cust-s', { idempotencyKey: 'key-s1' }), { id: 'mem-a', content: 'Customer S prefers email' }));
    await send(writeMemoryCommand(meta('cmd-s2', 'cust-s'), { id: 'mem-a', content: 'Customer S prefers phone', expectedVersion: 1 }));
    await first.instance.flush();
    // Written after the last snapshot, then the process is gone without storing another.
    await send(writeMemoryCommand(meta('cmd-s3', 'cust-s'), { id: 'mem-b', content: 'Customer S lives in Oslo' }));
    await first.stop();

    const second = await run();
    expect(second.folded).toBe(1);
    try {
      await send(
        writeMemoryCommand(meta('cmd-s1-retry', 'cust-s', { idempotencyKey: 'key-s1' }), { id: 'mem-a', content: 'Customer S prefers email' }),
        writeMemoryCommand(meta('cmd-s4', 'cust-s'), { id: 'mem-a', content: 'a stale update', expectedVersion: 1 }),
        writeMemoryCommand(meta('cmd-s5', 'cust-s'), { id: 'mem-b', content: 'a second first write', expectedVersion: 0 }),
        writeMemoryCommand(meta('cmd-s6', 'cust-s'), { id: 'mem-a', content: 'Customer S prefers chat', expectedVersion: 2 }),
      );
      expect(await replyTo('cmd-s1-retry')).toMatchObject({ outcome: 'accepted', result: { id: 'mem-a', version: 1 } });
      expect(await eventsOf('cmd-s1-retry')).toEqual([]);
      expect(await replyTo('cmd-s4')).toMatchObject({ outcome: 'rejected', code: 'MEM_CONFLICT' });
      expect(await replyTo('cmd-s5')).toMatchObject({ outcome: 'rejected', code: 'MEM_CONFLICT' });
      expect(await replyTo('cmd-s6')).toMatchObject({ outcome: 'accepted', result: { id: 'mem-a', version: 3 } });
    } finally {
      await second.stop();
    }
  });

  it('holds no more than its memory bound once stored, and decides on a dropped subject as on one it held', async () => {
    const bounded = await run({ maxEntries: 10 });
    try {
      const subjects = ['cust-m0', 'cust-m1', 'cust-m2', 'cust-m3', 'cust-m4'];
      for (const subject of subjects) {
        await send(...[0, 1, 2, 3].map((n) => writeMemoryCommand(
          meta(`cmd-${subject}-${n}`, subject, { idempotencyKey: `key-${subject}-${n}` }), { id: `mem-${n}`, content: `${subject} note ${n}` },
        )));
      }
      await bounded.instance.flush();
      expect(bounded.instance.heldEntries).toBeLessThanOrEqual(10);
      await send(
        writeMemoryCommand(meta('cmd-m-retry', 'cust-m0', { idempotencyKey: 'key-cust-m0-2' }), { id: 'mem-2', content: 'cust-m0 note 2' }),
        writeMemoryCommand(meta('cmd-m-stale', 'cust-m0'), { id: 'mem-1', content: 'a second first write', expectedVersion: 0 }),
        writeMemoryCommand(meta('cmd-m-update', 'cust-m0'), { id: 'mem-3', content: 'cust-m0 note 3, corrected', expectedVersion: 1 }),
      );
      expect(await replyTo('cmd-m-retry')).toMatchObject({ outcome: 'accepted', result: { id: 'mem-2', version: 1 } });
      expect(await eventsOf('cmd-m-retry')).toEqual([]);
      expect(await replyTo('cmd-m-stale')).toMatchObject({ outcome: 'rejected', code: 'MEM_CONFLICT' });
      expect(await replyTo('cmd-m-update')).toMatchObject({ outcome: 'accepted', result: { id: 'mem-3', version: 2 } });
    } finally {
      await bounded.stop();
    }
  });

  it('promotes a quarantined write restored from the snapshots with its content, read back from the log; the snapshots never hold it', async () => {
    const content = 'Customer Q door code is 5521';
    const first = await run();
    await send(writeMemoryCommand(meta('cmd-q1', 'cust-q'), { id: 'mem-q', content, trust: 'untrusted' }));
    expect(await replyTo('cmd-q1')).toMatchObject({ outcome: 'accepted', result: { status: 'quarantined' } });
    await first.instance.flush();
    await first.stop();
    const stored = await fx.kv.mget(await fx.kv.keys('gm:adm:'));
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.join('\n')).not.toContain('door code');

    const second = await run();
    expect(second.folded).toBe(0);
    try {
      const reviewer = { agentId: 'agent-reviewer', principalId: 'person-rev', principalKind: 'person', runId: 'run-2', purpose: 'support' };
      await send(MemoryCommand.parse({
        type: 'PromoteMemory', data: { id: 'mem-q', expectedVersion: 1 },
        metadata: { ...meta('cmd-q2', 'cust-q'), actor: reviewer, policyRevision: 1 },
      }));
      expect(await replyTo('cmd-q2')).toMatchObject({ outcome: 'accepted', result: { id: 'mem-q', version: 2, status: 'active' } });
      expect(await eventsOf('cmd-q2')).toMatchObject([{ type: 'MemoryPromoted', data: { id: 'mem-q', content } }]);
    } finally {
      await second.stop();
    }
  });

  it('stores a subject\'s state as soon as a purge of it commits, not at the next interval; what it stores holds neither the hash nor the sources', async () => {
    const SOURCE = 'crm://patients/cust-p-7731/oncology';
    const content = 'Customer P is treated for a rare condition';
    const admin = { agentId: 'agent-dpo', principalId: 'person-dpo', principalKind: 'person', runId: 'run-3', purpose: 'support' };
    const internal = (type: string, commandId: string, data: unknown) => MemoryCommand.parse({
      type, data, metadata: { ...meta(commandId, 'cust-p'), actor: admin, policyRevision: 1 },
    });
    const first = await run();
    await send(writeMemoryCommand(meta('cmd-p1', 'cust-p'), { id: 'mem-p', content, provenance: [{ source: 'tool', uri: SOURCE, observedAt: fx.clock.iso() }] }));
    await send(internal('ForgetSubject', 'cmd-p2', { jobId: 'job-p', within: { kind: 'tenant' } }), internal('TombstoneMemory', 'cmd-p2t', { id: 'mem-p', jobId: 'job-p' }));
    // The state before the purge is stored, as a periodic snapshot would have: hash and source in it
    // (this instance seals nothing, so the hash shows too).
    await first.instance.flush();
    const stored = async () => (await fx.kv.mget(await fx.kv.keys('gm:adm:'))).join('\n');
    expect(await stored()).toContain(sha256Hex(content));
    expect(await stored()).toContain(SOURCE);
    try {
      // The snapshot interval is a minute: only the purge itself can store the state now.
      await send(internal('PurgeMemory', 'cmd-p3', { id: 'mem-p', jobId: 'job-p' }));
      expect(await replyTo('cmd-p3')).toMatchObject({ outcome: 'accepted', result: { status: 'purged' } });
      await eventually('the purged state stored', async () => ((await fx.state.admission.unpurged(subjectKey(TENANT, 'cust-p'), ['mem-p'])).length === 0 ? true : undefined), WAIT_MS);
      expect(await stored()).not.toContain(sha256Hex(content));
      expect(await stored()).not.toContain(SOURCE);
    } finally {
      await first.stop();
    }
  });

  it('never logs content', async () => {
    await start();
    await send(
      writeMemoryCommand(meta('cmd-secret', 'cust-5'), { id: 'mem-s', content: 'Customer 5 door code is 9911' }),
      writeMemoryCommand(meta('cmd-secret-2', 'cust-5'), { id: 'mem-s', content: 'Customer 5 door code is 9911', expectedVersion: 7 }),
    );
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(logs.lines.join('\n')).not.toContain('door code');
  });
});
