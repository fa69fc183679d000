/**
 * When a subscription's partition is paused: at the bound of batches fetched ahead, and while
 * it is held after a failure — resumed only once neither holds.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PartitionFlow } from './kafka-partition-flow.ts';

/** A partition's pause switch as kafkajs hands it over: pause() answers its resume. */
function partition(): { paused: () => boolean; pause: () => () => void } {
  let paused = false;
  return {
    paused: () => paused,
    pause: () => {
      paused = true;
      return () => {
        paused = false;
      };
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('PartitionFlow', () => {
  it('keeps fetching while fewer than the bound of batches wait, pauses at it and resumes when one settles', () => {
    const flow = new PartitionFlow(3);
    const p = partition();
    flow.add('p', p.pause);
    flow.add('p', p.pause);
    expect(p.paused()).toBe(false);
    flow.add('p', p.pause);
    expect(p.paused()).toBe(true);
    flow.settle('p');
    expect(p.paused()).toBe(false);
  });

  it('keeps a held partition paused until the hold ends, even when its batches settle meanwhile', () => {
    vi.useFakeTimers();
    const flow = new PartitionFlow(3);
    const p = partition();
    flow.add('p', p.pause);
    flow.hold('p', p.pause, 1_000);
    flow.settle('p');
    expect(p.paused()).toBe(true);
    vi.advanceTimersByTime(1_000);
    expect(p.paused()).toBe(false);
  });

  it('keeps partitions apart: one at its bound leaves the others fetching', () => {
    const flow = new PartitionFlow(1);
    const a = partition();
    const b = partition();
    flow.add('a', a.pause);
    expect([a.paused(), b.paused()]).toEqual([true, false]);
  });
});
