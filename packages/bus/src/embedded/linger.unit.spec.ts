import { describe, expect, it } from 'vitest';
import { lingerDelayMs } from './linger.ts';

describe('lingerDelayMs', () => {
  it('waits lingerMs after the last batch while the handler is cheap', () => {
    expect(lingerDelayMs({ lingerMs: 1000, share: 0.25, busyMs: 100, sinceLastMs: 0 })).toBe(1000);
    expect(lingerDelayMs({ lingerMs: 1000, share: 0.25, busyMs: 100, sinceLastMs: 400 })).toBe(600);
  });

  it('waits three times the busy time at a quarter share once that is longer than lingerMs', () => {
    // 800 ms of handling per round, at most 25 % of the time: 2,400 ms idle between rounds.
    expect(lingerDelayMs({ lingerMs: 1000, share: 0.25, busyMs: 800, sinceLastMs: 0 })).toBe(2400);
    expect(lingerDelayMs({ lingerMs: 1000, share: 0.25, busyMs: 800, sinceLastMs: 2400 })).toBe(0);
  });

  it('is lingerMs alone at share 1, and never negative', () => {
    expect(lingerDelayMs({ lingerMs: 50, share: 1, busyMs: 10_000, sinceLastMs: 0 })).toBe(50);
    expect(lingerDelayMs({ lingerMs: 50, share: 0.5, busyMs: 10, sinceLastMs: 5000 })).toBe(0);
  });
});
