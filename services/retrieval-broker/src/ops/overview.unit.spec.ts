import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '@gm/observability';
import { TOPICS, dlqTopic } from '@gm/contracts';
import { OpsOverviewReader, scrapedSource, type OpsSource } from './overview.ts';
import { parseExposition } from './prometheus-text.ts';

/** A service's registry (prom-client, as every service has), reporting these lags. */
function serviceMetrics(lags: Array<{ group: string; topic: string; partition: number; lag: number }>) {
  const metrics = createMetrics({ processMetrics: false });
  metrics.lagSources.add(async () => lags);
  return metrics;
}

const local = (metrics: ReturnType<typeof createMetrics>): OpsSource => ({ name: 'local', read: () => metrics.registry.metrics() });

/** Dead-letter topics holding these counts per partition; every other topic was never created. */
const bus = (parked: Record<string, number[]>) => ({
  endOffsets: async (topic: string) => {
    const ends = parked[topic];
    if (ends === undefined) throw new Error(`no topic ${topic}`);
    return ends;
  },
});

describe('parseExposition', () => {
  it('reads the series prom-client writes, escaped label values included, and nothing it was not asked for', async () => {
    const metrics = serviceMetrics([{ group: 'odd "group"\\name', topic: TOPICS.events, partition: 3, lag: 7 }]);
    metrics.writes.inc({ status: 'active' }, 5);
    const samples = parseExposition(await metrics.registry.metrics(), (name) => name === 'gm_consumer_lag' || name === 'gm_writes_total');
    expect(samples).toEqual([
      { name: 'gm_consumer_lag', labels: { group: 'odd "group"\\name', topic: TOPICS.events, partition: '3' }, value: 7 },
      { name: 'gm_writes_total', labels: { status: 'active' }, value: 5 },
    ]);
  });

  it('skips a line it cannot read instead of dropping the rest', () => {
    const text = 'gm_writes_total{status="active"} 2\ngm_writes_total{status="active" 9\ngm_writes_total{status="quarantined"} 1 1700000000000\n';
    expect(parseExposition(text, () => true).map((s) => s.value)).toEqual([2, 1]);
  });
});

describe('OpsOverviewReader', () => {
  let server: Server;
  let url: string;
  const remote = serviceMetrics([
    { group: 'projector', topic: TOPICS.events, partition: 0, lag: 4 },
    { group: 'projector', topic: TOPICS.events, partition: 1, lag: 1 },
    // The broker's own registry reads the same group's lag too: the overview keeps one number.
    { group: 'write-admission', topic: TOPICS.commands, partition: 0, lag: 3 },
  ]);

  beforeAll(async () => {
    server = createServer((_req, res) => {
      void remote.registry.metrics().then((text) => res.writeHead(200, { 'content-type': remote.registry.contentType }).end(text));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('merges every source: per-partition lag once per group, counters summed, dead letters from the log, an unreachable source named', async () => {
    const mine = serviceMetrics([{ group: 'write-admission', topic: TOPICS.commands, partition: 0, lag: 3 }]);
    mine.writes.inc({ status: 'active' }, 2);
    remote.writes.inc({ status: 'quarantined' }, 1);
    remote.deadLetters.inc({ topic: TOPICS.commands });
    const reader = new OpsOverviewReader(
      [local(mine), scrapedSource(url), scrapedSource('http://127.0.0.1:1/metrics', 500)],
      bus({ [dlqTopic(TOPICS.commands)]: [2, 0, 1], [dlqTopic(TOPICS.events)]: [0, 0, 0] }),
    );
    const overview = await reader.read();
    reader.close();
    expect(overview.consumers).toEqual([
      { group: 'projector', topic: TOPICS.events, lag: 5, partitions: [{ partition: 0, lag: 4 }, { partition: 1, lag: 1 }] },
      { group: 'write-admission', topic: TOPICS.commands, lag: 3, partitions: [{ partition: 0, lag: 3 }] },
    ]);
    expect(overview.counters).toEqual({ writes: 3, searches: 0, deadLettered: 1 });
    expect(overview.deadLetters).toEqual([{ topic: TOPICS.commands, parked: 3 }, { topic: TOPICS.events, parked: 0 }]);
    expect(overview.sources).toEqual([{ source: 'local', ok: true }, { source: url, ok: true }, { source: 'http://127.0.0.1:1/metrics', ok: false }]);
    expect(overview.history).toEqual([{ at: overview.at, lag: 8, writesPerSecond: 0, searchesPerSecond: 0 }]);
  });

  it('keeps a history of readings whose rates are the counters\' change per second', async () => {
    const mine = serviceMetrics([]);
    let now = Date.parse('2026-12-03T10:00:00.000Z');
    const reader = new OpsOverviewReader([local(mine)], bus({}), { intervalMs: 60_000, now: () => now });
    const first = await reader.read();
    mine.writes.inc({ status: 'active' }, 40);
    now += 500;
    // Within a second of the last reading: no point of its own (a polling console and the timer share the history).
    expect((await reader.read()).history).toHaveLength(1);
    now += 1_500;
    mine.writes.inc({ status: 'active' }, 10);
    const second = await reader.read();
    reader.close();
    expect(second.history).toEqual([first.history[0], { at: '2026-12-03T10:00:02.000Z', lag: 0, writesPerSecond: 25, searchesPerSecond: 0 }]);
  });
});
