import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteBus, memoryTopicSpecs, type Bus } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { PipelineBacklog } from './backlog.ts';

describe('PipelineBacklog', () => {
  let bus: Bus;
  let dir: string;
  afterEach(async () => {
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(): Promise<Bus> {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gm-backlog-'));
    bus = createSqliteBus({ file: path.join(dir, 'bus.db') });
    await bus.ensureTopics(memoryTopicSpecs(2));
    return bus;
  }

  const codeOf = async (p: Promise<unknown>) => p.then(() => 'admitted', (err: { code?: string; retriable?: boolean }) => `${err.code} retriable=${String(err.retriable)}`);

  it('admits asynchronous writes up to the limit of undecided commands, and refuses them past it, retriably', async () => {
    const log = await open();
    const commands = (n: number, from: number) => log.produce(Array.from({ length: n }, (_, i) => ({ topic: TOPICS.commands, key: `t/s${from + i}`, value: {} })));
    await commands(3, 0);
    expect(await codeOf(new PipelineBacklog(log, 3).admitAsync())).toBe('admitted');
    await commands(1, 3);
    // A fresh reader: the first one keeps its reading for a tenth of a second.
    expect(await codeOf(new PipelineBacklog(log, 3).admitAsync())).toBe('MEM_UNAVAILABLE retriable=true');
  });

  it('counts the events the slower read-your-writes projection has not folded', async () => {
    const log = await open();
    await log.produce(Array.from({ length: 5 }, (_, i) => ({ topic: TOPICS.events, key: `t/s${i}`, value: {} })));
    expect(await codeOf(new PipelineBacklog(log, 4).admitAsync())).toBe('MEM_UNAVAILABLE retriable=true');
    expect(await codeOf(new PipelineBacklog(log, 5).admitAsync())).toBe('admitted');
  });

  it('refuses an asynchronous write retriably when the backlog cannot be read in time (a broker that hangs), rather than leaving it unanswered', async () => {
    const log = await open();
    const hanging = new Proxy(log, {
      get: (target, prop, receiver) => (prop === 'endOffsets' ? () => new Promise<never>(() => undefined) : Reflect.get(target, prop, receiver)),
    });
    expect(await codeOf(new PipelineBacklog(hanging, 3, 50).admitAsync())).toBe('MEM_UNAVAILABLE retriable=true');
  });
});
