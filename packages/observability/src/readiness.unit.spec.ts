import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.ts';

/** gm_ready: what /readyz would say, read at each scrape (the not-ready alert of docs/deploy.md). */
describe('gm_ready', () => {
  const ready = async (metrics: ReturnType<typeof createMetrics>) =>
    (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('gm_ready'));

  it('is 1 when every check answers yes, 0 when one says no or throws, and absent without checks', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(await ready(metrics)).toEqual([]);
    metrics.addReadinessCheck(async () => true);
    expect(await ready(metrics)).toEqual(['gm_ready 1']);
    metrics.addReadinessCheck(async () => {
      throw new Error('redis away');
    });
    expect(await ready(metrics)).toEqual(['gm_ready 0']);
  });

  it('says 0 for a check that never answers, and the scrape still completes', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.addReadinessCheck(() => new Promise<boolean>(() => undefined));
    expect(await ready(metrics)).toEqual(['gm_ready 0']);
    // The other series are still there.
    expect(await metrics.registry.metrics()).toContain('gm_writes_total');
  });
});
