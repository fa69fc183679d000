/**
 * The sealed view of a real SQLite bus: services handle plaintext, while the log (rows, WAL,
 * dead letters) only ever holds envelopes. Each test owns a temp dir with its bus file.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSqliteBus, memoryTopicSpecs, type Bus, type BusLogger, type ConsumedMessage, type OutgoingMessage } from '@gm/bus';
import {
  MemoryWritten, SEALED_CONTENT, TOPICS, dlqTopic, subjectKey, type CommandOf,
} from '@gm/contracts';
import { createSqliteKeyStore } from '../embedded/sqlite-key-store.ts';
import { Envelope } from '../envelope.ts';
import type { KeyStore } from '../key-store.ts';
import { masterKeys } from '../master-keys.ts';
import { openContentCrypto, type ContentCrypto } from './content-crypto.ts';
import { ACTOR, SUBJECT, T0, TENANT, commandContent, writeCommand, writtenContent } from './fixtures.ts';

const KEYS = masterKeys('m1', new Map([['m1', randomBytes(32)]]));
const KEY = subjectKey(TENANT, SUBJECT);
/** Distinctive text: searching the bus file's bytes for it must find nothing. */
const SECRET = 'Alice-passport-X4471-zq9';

/** What write-admission would emit for a command: the record, content included, at version 1. */
function writtenFrom(command: CommandOf<'WriteMemory'>): OutgoingMessage {
  const { expectedVersion: _v, ...data } = command.data;
  return {
    topic: TOPICS.events,
    key: KEY,
    value: MemoryWritten.parse({
      type: 'MemoryWritten',
      data: {
        record: {
          ...data, tenantId: TENANT, agentId: ACTOR.agentId, subjectId: SUBJECT, createdAt: T0,
          expiresAt: '2025-04-01T09:00:00.000Z', version: 1, status: 'active', policyRevision: 0,
        },
      },
      metadata: { ...command.metadata, eventId: `evt-${data.id}` },
    }),
  };
}


async function collect(bus: Bus, topic: string): Promise<ConsumedMessage[]> {
  const all: ConsumedMessage[] = [];
  for await (const message of bus.readAll(topic)) all.push(message);
  return all;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const quiet: BusLogger = { warn: () => undefined };

/** A raw SQLite bus in a temp dir, the key store next to it, and the crypto for the views. */
async function setup(): Promise<{ raw: Bus; crypto: ContentCrypto; store: KeyStore; fileBytes: () => Promise<Buffer> }> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-sealed-bus-'));
  const raw = createSqliteBus({ file: join(dir, 'bus.db'), logger: quiet, pollIntervalMs: 20 });
  const store = createSqliteKeyStore({ file: join(dir, 'keys.db') });
  const crypto = await openContentCrypto({ masterKeys: KEYS, store });
  onTestFinished(async () => {
    crypto.close();
    await raw.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  await raw.ensureTopics(memoryTopicSpecs(2));
  // The bus file and its WAL / shared-memory files, whatever SQLite has not checkpointed yet.
  const fileBytes = async () => {
    const names = (await readdir(dir)).filter((name) => name.startsWith('bus.db'));
    return Buffer.concat(await Promise.all(names.map((name) => readFile(join(dir, name)))));
  };
  return { raw, crypto, store, fileBytes };
}

describe('sealedBus over the SQLite bus', () => {
  it('produce seals: the raw log and the bus file hold envelopes only; the view reads plaintext', async () => {
    const { raw, crypto, fileBytes } = await setup();
    const view = crypto.view(raw, 'open');
    const command = writeCommand('r1', SECRET);
    const event = writtenFrom(command.value as CommandOf<'WriteMemory'>);
    await view.produce([command]);
    await view.produce([event]);
    // A control through the raw bus: the byte search below does see what the log holds in the clear.
    await raw.produce([{ topic: TOPICS.replies, key: 'c', value: { note: 'control-text-8812' } }]);

    const [rawCommand] = await collect(raw, TOPICS.commands);
    const [rawEvent] = await collect(raw, TOPICS.events);
    expect(Envelope.parse(commandContent(rawCommand?.value)).kid).toMatch(/^tk:local:\d{10}$/);
    expect(Envelope.parse(writtenContent(rawEvent?.value)).kid).toBe('dk:t1/r1/1');
    const bytes = await fileBytes();
    expect(bytes.includes('control-text-8812')).toBe(true);
    expect(bytes.includes(SECRET)).toBe(false);

    expect((await collect(view, TOPICS.commands)).map((m) => m.value)).toEqual([command.value]);
    expect((await collect(view, TOPICS.events)).map((m) => m.value)).toEqual([event.value]);
    const partition = raw.partitionFor(TOPICS.events, KEY);
    const fromPartition: unknown[] = [];
    for await (const m of view.readPartition(TOPICS.events, partition, 0)) fromPartition.push(m.value);
    expect(fromPartition).toEqual([event.value]);
  });

  it('content of one subject produced in one batch all reads back, also by another service', async () => {
    const { raw, crypto, store } = await setup();
    const events = ['r1', 'r2', 'r3'].map((id) => writtenFrom(writeCommand(id, `${SECRET} ${id}`).value as CommandOf<'WriteMemory'>));
    await crypto.view(raw, 'open').produce(events);
    // Another service: its own keyring (empty cache) on the same key store.
    const fresh = await openContentCrypto({ masterKeys: KEYS, store });
    onTestFinished(() => fresh.close());
    expect((await collect(fresh.view(raw, 'open'), TOPICS.events)).map((m) => writtenContent(m.value)).sort()).toEqual(
      ['r1', 'r2', 'r3'].map((id) => `${SECRET} ${id}`),
    );
  });

  it('a subscriber handles plaintext; what it sends to memory.events lands sealed; onCommitted still runs', async () => {
    const { raw, crypto } = await setup();
    const view = crypto.view(raw, 'open');
    const seen: unknown[] = [];
    const committed = deferred();
    const sub = await view.subscribe({
      groupId: 'admission',
      topics: [TOPICS.commands],
      handler: async (message, ctx) => {
        seen.push(commandContent(message.value));
        ctx.send([writtenFrom(message.value as CommandOf<'WriteMemory'>)]);
        ctx.onCommitted(committed.resolve);
      },
    });
    onTestFinished(() => sub.close());
    const [position] = await view.produce([writeCommand('r1', SECRET)]);
    if (position === undefined) throw new Error('produce returned no position');
    expect(await view.waitForCommitted('admission', position, 10_000)).toBe(true);
    await committed.promise;

    expect(seen).toEqual([SECRET]);
    const [rawEvent] = await collect(raw, TOPICS.events);
    expect(Envelope.parse(writtenContent(rawEvent?.value)).kid).toBe('dk:t1/r1/1');
    expect(JSON.stringify(rawEvent?.value)).not.toContain(SECRET);
    const [opened] = await collect(view, TOPICS.events);
    expect(writtenContent(opened?.value)).toBe(SECRET);
  });

  it('a handler that dead-letters the message it got forwards it sealed, as it came', async () => {
    const { raw, crypto } = await setup();
    const view = crypto.view(raw, 'open');
    const seen: unknown[] = [];
    const sub = await view.subscribe({
      groupId: 'admission',
      topics: [TOPICS.commands],
      handler: async (message, ctx) => {
        seen.push(commandContent(message.value));
        ctx.send([{ topic: dlqTopic(message.topic), key: message.key, value: message.value, headers: { 'dlq.error': 'invalid command' } }]);
      },
    });
    onTestFinished(() => sub.close());
    const [position] = await view.produce([writeCommand('r1', SECRET)]);
    if (position === undefined) throw new Error('produce returned no position');
    expect(await view.waitForCommitted('admission', position, 10_000)).toBe(true);

    expect(seen).toEqual([SECRET]);
    const [rawCommand] = await collect(raw, TOPICS.commands);
    const dead = await collect(raw, dlqTopic(TOPICS.commands));
    expect(dead.map((m) => m.value)).toEqual([rawCommand?.value]);
    expect(dead[0]?.headers['dlq.error']).toBe('invalid command');
    expect(JSON.stringify(dead[0]?.value)).not.toContain(SECRET);
  });

  it('roles: the edge seals commands it cannot read back; a redact view reads SEALED_CONTENT and cannot write content', async () => {
    const { raw, crypto } = await setup();
    const edge = crypto.view(raw, 'edge');
    const redact = crypto.view(raw, 'redact');
    const command = writeCommand('r1', SECRET);
    await edge.produce([command]);
    expect((await collect(crypto.view(raw, 'open'), TOPICS.commands)).map((m) => m.value)).toEqual([command.value]);
    expect(commandContent((await collect(edge, TOPICS.commands))[0]?.value)).toBe(SEALED_CONTENT);
    expect(commandContent((await collect(redact, TOPICS.commands))[0]?.value)).toBe(SEALED_CONTENT);

    const event = writtenFrom(command.value as CommandOf<'WriteMemory'>);
    await expect(edge.produce([event])).rejects.toEqual(expect.objectContaining({ code: 'MEM_INTERNAL' }));
    await expect(redact.produce([writeCommand('r2', SECRET)])).rejects.toEqual(expect.objectContaining({ code: 'MEM_INTERNAL' }));
    // Nothing reached the log in the clear.
    expect(await collect(raw, TOPICS.events)).toEqual([]);
    expect(await collect(raw, TOPICS.commands)).toHaveLength(1);
  });
});
