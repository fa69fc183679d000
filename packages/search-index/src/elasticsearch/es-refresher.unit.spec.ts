import { describe, expect, it } from 'vitest';
import { Refresher } from './es-refresher.ts';

/** A refresh the test finishes by hand, counting how many were started. */
function manualRefresh(): { refresh: () => Promise<void>; started: () => number; finish: (n: number) => void } {
  const pending: Array<() => void> = [];
  return {
    refresh: () => new Promise<void>((resolve) => pending.push(resolve)),
    started: () => pending.length,
    finish: (n) => pending[n]?.(),
  };
}

const settled = async (p: Promise<void>): Promise<boolean> => {
  let done = false;
  void p.then(() => { done = true; });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('Refresher', () => {
  it('gives writers arriving together one refresh', async () => {
    const manual = manualRefresh();
    const refresher = new Refresher(manual.refresh);
    const a = refresher.afterWrite();
    const b = refresher.afterWrite();
    expect(manual.started()).toBe(1);
    // The running refresh may have started before b's write: b waits for the next one.
    manual.finish(0);
    expect(await settled(a)).toBe(true);
    expect(await settled(b)).toBe(false);
    expect(manual.started()).toBe(2);
    const c = refresher.afterWrite();
    manual.finish(1);
    expect(await settled(b)).toBe(true);
    expect(await settled(c)).toBe(false);
  });

  it('never answers a writer with a refresh that started before its write', async () => {
    const manual = manualRefresh();
    const refresher = new Refresher(manual.refresh);
    const early = refresher.afterWrite();
    const late = [refresher.afterWrite(), refresher.afterWrite(), refresher.afterWrite()];
    manual.finish(0);
    expect(await settled(early)).toBe(true);
    // All writers that came while the first refresh ran share the second one.
    expect(manual.started()).toBe(2);
    for (const p of late) expect(await settled(p)).toBe(false);
    manual.finish(1);
    await Promise.all(late);
    expect(manual.started()).toBe(2);
  });

  it('passes a failed refresh on to its writers, and the next writer starts a new one', async () => {
    let calls = 0;
    const refresher = new Refresher(async () => {
      calls += 1;
      if (calls === 1) throw new Error('index unavailable');
    });
    await expect(refresher.afterWrite()).rejects.toThrow('index unavailable');
    await expect(refresher.afterWrite()).resolves.toBeUndefined();
    expect(calls).toBe(2);
  });
});
