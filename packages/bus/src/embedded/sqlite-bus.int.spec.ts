/**
 * The SQLite bus against the bus contract, each test on its own file in a fresh temp dir,
 * plus what only the embedded adapter promises: the file format, crash durability, other
 * processes' writes, compaction on read and the commit fence.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { testBus } from '@gm/testing/contracts/bus';
import type { Bus, ConsumedMessage, MessageHandler } from '../port.ts';
import type { BusLogger } from '../bus-logger.ts';
import { createSqliteBus } from './sqlite-bus.ts';

async function tempFile(): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-bus-'));
  return { dir, file: join(dir, 'bus.sqlite') };
}

/** Collects warnings instead of printing them: several tests make handlers fail on purpose. */
function memoryLogger(): BusLogger & { entries: Array<{ obj: object; msg: string }> } {
  const entries: Array<{ obj: object; msg: string }> = [];
  return { entries, warn: (obj, msg) => entries.push({ obj, msg }) };
}

testBus('sqlite', async () => {
  const { dir, file } = await tempFile();
  const logger = memoryLogger();
  let bus = createSqliteBus({ file, logger });
  return {
    get bus() {
      return bus;
    },
    reopen: async () => {
      await bus.close();
      bus = createSqliteBus({ file, logger });
      return bus;
    },
    cleanup: async () => {
      await bus.close();
      await rm(dir, { recursive: true, force: true });
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

describe('sqlite bus', () => {
  let dir: string;
  let file: string;
  const opened: Bus[] = [];
  let logger = memoryLogger();
  const open = (options: { pollIntervalMs?: number } = {}): Bus => {
    const bus = createSqliteBus({ file, logger, ...options });
    opened.push(bus);
    return bus;
  };

  beforeEach(async () => {
    ({ dir, file } = await tempFile());
    logger = memoryLogger();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((bus) => bus.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the log in one WAL-mode SQLite file with the documented tables', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 't', partitions: 2 }]);
    await bus.produce([{ topic: 't', key: 'k', value: { a: 1 }, headers: { h: 'v' } }]);
    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
      expect(tables.map((t) => t.name)).toEqual(['group_offsets', 'messages', 'topics']);
      expect(db.prepare('SELECT name, partitions, compacted FROM topics ORDER BY name').all()).toEqual([
        { name: 't', partitions: 2, compacted: 0 },
        { name: 't.dlq', partitions: 2, compacted: 0 },
      ]);
      expect(db.prepare('SELECT key, value, headers FROM messages').all()).toEqual([{ key: 'k', value: '{"a":1}', headers: '{"h":"v"}' }]);
    } finally {
      db.close();
    }
  });

  it('keeps committed messages when the process dies without closing the bus', async () => {
    const child = fileURLToPath(new URL('./sqlite-bus.crash-child.ts', import.meta.url));
    // Run from the repository root, where tsx is installed.
    const root = fileURLToPath(new URL('../../../../', import.meta.url));
    const exit = await new Promise<NodeJS.Signals | number | null>((resolve, reject) => {
      const proc = spawn(process.execPath, ['--import', 'tsx', child, file], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
      proc.on('error', reject);
      proc.on('exit', (code, signal) => resolve(signal ?? code));
    });
    expect(exit).toBe('SIGKILL');
    const bus = open();
    expect((await collect(bus, 'crash')).map((m) => m.value)).toEqual([1, 2, 3]);
    expect(await bus.committedOffsets('crash-group', 'crash')).toEqual([2]);
    expect(await collect(bus, 'crash.out')).toHaveLength(2);
  });

  it('sees messages another connection appends, through the poll fallback', async () => {
    const consumer = open({ pollIntervalMs: 20 });
    const producer = open();
    await consumer.ensureTopics([{ name: 't', partitions: 1 }]);
    const received: unknown[] = [];
    const sub = await consumer.subscribe({ groupId: 'g', topics: ['t'], handler: async (m) => { received.push(m.value); } });
    const [position] = await producer.produce([{ topic: 't', key: 'k', value: 'from elsewhere' }]);
    if (position === undefined) throw new Error('no position');
    expect(await producer.waitForCommitted('g', position, 10_000)).toBe(true);
    await sub.close();
    expect(received).toEqual(['from elsewhere']);
  });

  it('returns only the latest message per key when reading a compacted topic', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 'records', partitions: 2, compacted: true }, { name: 'plain', partitions: 2 }]);
    for (const topic of ['records', 'plain']) {
      await bus.produce(['a', 'b', 'a', 'c', 'a', 'b'].map((key, i) => ({ topic, key, value: `${key}${i}` })));
    }
    expect((await collect(bus, 'records')).map((m) => m.value).sort()).toEqual(['a4', 'b5', 'c3']);
    expect(await collect(bus, 'plain')).toHaveLength(6);
  });

  it('keeps a topic and its .dlq at their count when asked for more partitions', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 't', partitions: 2 }]);
    await expect(bus.ensureTopics([{ name: 't', partitions: 4 }])).rejects.toThrow('topic "t" has 2 partitions, but 4 were asked for');
    expect(await bus.endOffsets('t')).toEqual([0, 0]);
    expect(await bus.endOffsets('t.dlq')).toEqual([0, 0]);
  });

  it('keeps dead letters\' original headers and dead-letters sends to unknown topics', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 'in', partitions: 1 }]);
    const sub = await bus.subscribe({
      groupId: 'g', topics: ['in'], maxAttempts: 2, retryBackoffMs: 1,
      handler: async (m, ctx) => ctx.send([{ topic: 'nowhere', key: m.key, value: 1 }]),
    });
    const [position] = await bus.produce([{ topic: 'in', key: 'k', value: 'v', headers: { trace: 't-1' } }]);
    if (position === undefined) throw new Error('no position');
    expect(await bus.waitForCommitted('g', position, 10_000)).toBe(true);
    await sub.close();
    const [dead] = await collect(bus, 'in.dlq');
    expect(dead?.headers).toMatchObject({ trace: 't-1', 'dlq.attempts': '2' });
    expect(dead?.headers['dlq.error']).toContain('nowhere');
    // Operators learn where the poison message sits, never what it says.
    expect(logger.entries.map((e) => e.msg)).toEqual(['bus handler failed; retrying', 'bus message dead-lettered']);
    expect(logger.entries[1]?.obj).toMatchObject({ groupId: 'g', topic: 'in', partition: 0, offset: 0, attempts: 2 });
    expect(JSON.stringify(logger.entries)).not.toContain('"v"');
  });

  it('assigns partition p to member p % members, in join order', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 'in', partitions: 4 }]);
    const release = deferred();
    const seen: Array<Set<number>> = [new Set(), new Set()];
    const subs = await Promise.all(
      seen.map((partitions, member) =>
        bus.subscribe({
          groupId: 'g', topics: ['in'],
          handler: async (m) => {
            partitions.add(m.partition);
            // The first member stalls, so a second member that could take its partitions would.
            if (member === 0) await release.promise;
          },
        }),
      ),
    );
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    const positions = await bus.produce(keys.map((key) => ({ topic: 'in', key, value: key })));
    const last = (p: number): number => Math.max(...positions.filter((x) => x.partition === p).map((x) => x.offset));
    try {
      for (const p of [1, 3]) expect(await bus.waitForCommitted('g', { topic: 'in', partition: p, offset: last(p) }, 10_000)).toBe(true);
      expect(await bus.committedOffsets('g', 'in')).toEqual([0, last(1) + 1, 0, last(3) + 1]);
    } finally {
      release.resolve();
    }
    for (const p of [0, 2]) expect(await bus.waitForCommitted('g', { topic: 'in', partition: p, offset: last(p) }, 10_000)).toBe(true);
    await Promise.all(subs.map((sub) => sub.close()));
    expect(seen.map((partitions) => [...partitions].sort())).toEqual([[0, 2], [1, 3]]);
  });

  it('refuses to subscribe to a topic that does not exist, naming it', async () => {
    const bus = open();
    await expect(bus.subscribe({ groupId: 'g', topics: ['ghost'], handler: async () => undefined })).rejects.toThrow('ghost');
  });

  it('appends exactly once even when two buses on one file race for the same group', async () => {
    const first = open({ pollIntervalMs: 10 });
    const second = open({ pollIntervalMs: 10 });
    await first.ensureTopics([{ name: 'in', partitions: 2 }, { name: 'out', partitions: 2 }]);
    const handler: MessageHandler = async (m, ctx) => {
      await new Promise((resolve) => setImmediate(resolve));
      ctx.send([{ topic: 'out', key: m.key, value: m.value }]);
    };
    const subs = await Promise.all([first, second].map((bus) => bus.subscribe({ groupId: 'g', topics: ['in'], handler })));
    await first.produce(Array.from({ length: 40 }, (_, i) => ({ topic: 'in', key: `k${i}`, value: i })));
    const ends = await first.endOffsets('in');
    for (const [partition, end] of ends.entries()) {
      if (end > 0) expect(await first.waitForCommitted('g', { topic: 'in', partition, offset: end - 1 }, 10_000)).toBe(true);
    }
    await Promise.all(subs.map((sub) => sub.close()));
    const out = (await collect(first, 'out')).map((m) => m.value);
    expect(out.sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('rejects calls after close, and close is idempotent', async () => {
    const bus = open();
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    await bus.close();
    await bus.close();
    await expect(bus.produce([{ topic: 't', key: 'k', value: 1 }])).rejects.toThrow(/closed/);
  });

  it('wakes consumers and commit waiters of another bus on the same file at once, not at its poll', async () => {
    // Polls far beyond the waits below: only the buses' own announcements can satisfy them.
    const consumer = open({ pollIntervalMs: 600_000 });
    const producer = open({ pollIntervalMs: 600_000 });
    await consumer.ensureTopics([{ name: 't', partitions: 1 }]);
    const sub = await consumer.subscribe({ groupId: 'g', topics: ['t'], handler: async () => undefined });
    const [position] = await producer.produce([{ topic: 't', key: 'k', value: 'next door' }]);
    if (position === undefined) throw new Error('no position');
    expect(await producer.waitForCommitted('g', position, 10_000)).toBe(true);
    await sub.close();
  });
});
