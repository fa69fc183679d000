import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommandReply, MemoryEvent, TOPICS, subjectKey, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { openEmbeddedFixture, writeMemoryCommand, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from './admission.ts';

const COMMANDS = 600;
const KILL_AT = 200;

describe('write-admission killed inside a large batch\'s transaction', () => {
  let fx: EmbeddedFixture;
  let admission: ServiceHandle | undefined;
  beforeEach(async () => {
    fx = await openEmbeddedFixture({ partitions: 1 });
  });
  afterEach(async () => {
    await admission?.close();
    await fx.close();
  });

  it('loses and duplicates no acknowledged command: after the restart each has one reply and one event', async () => {
    // Acknowledged: produce returned, so the commands are durably on the log before write-admission starts.
    const commands = Array.from({ length: COMMANDS }, (_, i) =>
      writeMemoryCommand({ commandId: `cmd-${i}`, tenantId: 'acme', subjectId: `subj-${i % 7}`, now: fx.clock.iso() }, { id: `rec-${i}`, content: `note ${i}` }));
    await fx.bus.produce(commands.map((c) => ({ topic: TOPICS.commands, key: subjectKey('acme', c.metadata.subjectId), value: c })));
    await fx.bus.close();

    const child = fileURLToPath(new URL('./admission.crash-child.ts', import.meta.url));
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const exit = await new Promise<NodeJS.Signals | number | null>((resolve, reject) => {
      const proc = spawn(process.execPath, ['--import', 'tsx', child, path.join(fx.dir, 'bus.db'), path.join(fx.dir, 'state.db'), String(KILL_AT)], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
      proc.on('error', reject);
      proc.on('exit', (code, signal) => resolve(signal ?? code));
    });
    expect(exit).toBe('SIGKILL');

    await fx.reopen();
    // The transaction the kill interrupted left nothing: no event and no reply yet.
    expect(await fx.bus.committedOffsets(WRITE_ADMISSION_GROUP, TOPICS.commands)).toEqual([0]);
    expect(await fx.readTopic(TOPICS.events)).toEqual([]);
    expect(await fx.readTopic(TOPICS.replies)).toEqual([]);

    admission = await startWriteAdmission({
      bus: fx.bus, log: createLogger({ name: 'spec', level: 'silent' }), metrics: createMetrics(),
      decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
      snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 1_000 },
    });
    expect(await fx.bus.waitForCommitted(WRITE_ADMISSION_GROUP, { topic: TOPICS.commands, partition: 0, offset: COMMANDS - 1 }, 30_000)).toBe(true);
    const replies = (await fx.readTopic(TOPICS.replies)).map((m) => CommandReply.parse(m.value));
    expect(replies.map((r) => r.commandId).sort()).toEqual(commands.map((c) => c.metadata.commandId).sort());
    expect(replies.filter((r) => r.outcome !== 'accepted')).toEqual([]);
    const written = (await fx.readTopic(TOPICS.events)).map((m) => MemoryEvent.parse(m.value)).filter((e) => e.type === 'MemoryWritten');
    expect(written.map((e) => e.metadata.commandId).sort()).toEqual(commands.map((c) => c.metadata.commandId).sort());
  }, 60_000);
});
