import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from '@gm/observability';
import { createSqliteBus } from './sqlite-bus.ts';
import type { Bus } from '../port.ts';
import { meteredBus } from '../metered-bus.ts';

describe('meteredBus', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function open(): Promise<Bus> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-lag-'));
    const bus = createSqliteBus({ file: path.join(dir, 'bus.db') });
    cleanups.push(async () => {
      await bus.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await bus.ensureTopics([{ name: 'in', partitions: 2 }]);
    return bus;
  }

  const lagLines = async (metrics: ReturnType<typeof createMetrics>) =>
    (await metrics.registry.getSingleMetricAsString('gm_consumer_lag')).split('\n').filter((l) => l.startsWith('gm_consumer_lag{'));

  it('exports, per group and partition, what the log holds past the group\'s committed offset', async () => {
    const raw = await open();
    const metrics = createMetrics({ processMetrics: false });
    const bus = meteredBus(raw, metrics);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const sub = await bus.subscribe({ groupId: 'slow', topics: ['in'], handler: async () => held });
    cleanups.push(() => sub.close());
    const positions = await raw.produce(['a', 'b', 'c', 'd', 'e'].map((key) => ({ topic: 'in', key, value: key })));
    const perPartition = [0, 1].map((p) => positions.filter((x) => x.partition === p).length);
    // The handler holds the first message: nothing is committed yet.
    expect(await lagLines(metrics)).toEqual([
      `gm_consumer_lag{group="slow",topic="in",partition="0"} ${perPartition[0]}`,
      `gm_consumer_lag{group="slow",topic="in",partition="1"} ${perPartition[1]}`,
    ]);
    release();
    const last = positions.at(-1);
    if (last === undefined) throw new Error('no position');
    for (const p of [0, 1]) {
      const end = (await raw.endOffsets('in'))[p] ?? 0;
      if (end > 0) expect(await raw.waitForCommitted('slow', { topic: 'in', partition: p, offset: end - 1 }, 10_000)).toBe(true);
    }
    expect(await lagLines(metrics)).toEqual([
      'gm_consumer_lag{group="slow",topic="in",partition="0"} 0',
      'gm_consumer_lag{group="slow",topic="in",partition="1"} 0',
    ]);
  });

  it('counts what its handlers dead-letter, per topic, from 0', async () => {
    const raw = await open();
    const metrics = createMetrics({ processMetrics: false });
    const bus = meteredBus(raw, metrics);
    const parked = Promise.withResolvers<void>();
    const sub = await bus.subscribe({
      groupId: 'failing', topics: ['in'], maxAttempts: 1,
      onDeadLettered: () => parked.resolve(),
      handler: async () => {
        throw new Error('cannot handle this one');
      },
    });
    cleanups.push(() => sub.close());
    const dead = async () => (await metrics.registry.getSingleMetricAsString('gm_dead_letters_total')).split('\n').filter((l) => l.startsWith('gm_dead_letters_total{'));
    expect(await dead()).toEqual(['gm_dead_letters_total{topic="in"} 0']);
    await raw.produce([{ topic: 'in', key: 'a', value: 'a' }]);
    await parked.promise;
    expect(await dead()).toEqual(['gm_dead_letters_total{topic="in"} 1']);
  });

  it('leaves every other method as the bus has it', async () => {
    const raw = await open();
    const bus = meteredBus(raw, createMetrics({ processMetrics: false }));
    const [position] = await bus.produce([{ topic: 'in', key: 'k', value: 1 }]);
    expect(await bus.endOffsets('in')).toEqual(await raw.endOffsets('in'));
    expect(position?.topic).toBe('in');
    expect(bus.partitionFor('in', 'k')).toBe(raw.partitionFor('in', 'k'));
  });
});
