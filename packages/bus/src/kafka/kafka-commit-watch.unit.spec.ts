/**
 * The read-your-writes wait on Kafka (kafka-commit-watch.ts) answers at its deadline even while
 * an offset fetch hangs: a broker in controlled shutdown or frozen kept one fetch past 30 s in
 * the fault suite, and the HTTP requests waiting on it went unanswered.
 */
import { describe, expect, it } from 'vitest';
import { Signal } from '../signal.ts';
import { CommitWatch } from './kafka-commit-watch.ts';
import type { Groups } from './kafka-groups.ts';

describe('CommitWatch', () => {
  it('answers "not committed" at the deadline while the offset fetch never returns', async () => {
    const hanging = { committed: () => new Promise<never>(() => undefined) } as unknown as Groups;
    const watch = new CommitWatch(hanging, new Signal(), () => false);

    await expect(watch.wait('g', 'memory.events', 0, 10, 50)).resolves.toBe(false);
    // A second waiter on the same group, while the first fetch still hangs, gets its own deadline.
    await expect(watch.wait('g', 'memory.events', 0, 11, 50)).resolves.toBe(false);
  });

  it('answers "committed" once a fetch shows the group past the offset', async () => {
    let committed = 5;
    const groups = { committed: async () => new Map([[0, committed]]) } as unknown as Groups;
    const watch = new CommitWatch(groups, new Signal(), () => false);
    const waiting = watch.wait('g', 'memory.events', 0, 7, 60_000);
    committed = 8;
    await expect(waiting).resolves.toBe(true);
  });
});
