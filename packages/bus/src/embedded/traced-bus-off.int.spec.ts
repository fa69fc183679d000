import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteBus } from './sqlite-bus.ts';
import { tracedBus } from '../tracing.ts';

/** Traces are off unless asked (docs/operations.md#traces): without an SDK, tracedBus writes no header and changes nothing. */
describe('tracedBus without tracing', () => {
  it('adds no trace header to what is produced or sent, and hands messages over as they are', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-untraced-'));
    const raw = createSqliteBus({ file: path.join(dir, 'bus.db'), pollIntervalMs: 5 });
    try {
      await raw.ensureTopics([{ name: 'in', partitions: 1 }, { name: 'out', partitions: 1 }]);
      const bus = tracedBus(raw, 'gm_log');
      await bus.produce([{ topic: 'in', key: 'k', value: { type: 'WriteMemory' }, headers: { 'x-own': '1' } }]);
      const done = Promise.withResolvers<Record<string, string>>();
      const sub = await bus.subscribe({
        groupId: 'g', topics: ['in'],
        handler: async (message, ctx) => {
          ctx.send([{ topic: 'out', key: 'k', value: 1 }]);
          ctx.onCommitted(() => done.resolve(message.headers));
        },
      });
      expect(await done.promise).toEqual({ 'x-own': '1' });
      await sub.close();
      for await (const message of raw.readPartition('out', 0, 0)) expect(message.headers).toEqual({});
    } finally {
      await raw.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
