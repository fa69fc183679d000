/**
 * The read-your-writes wait on Kafka (kafka-commit-watch.ts) answers at its deadline even while
 * an offset fetch hangs: a broker in controlled shutdown or frozen kept one fetch past 30 s in
 * the fault suite, and the HTTP requests waiting on it went unanswered. Told of commits
 * (CommitNotices), it answers from the notices and fetches only as a fallback.
 */
import { describe, expect, it, vi } from 'vitest';
import type { CommitNotice, CommitNotices } from '../port.ts';
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

/** Notices as one process hears them: listen per group, tell by hand; counts the offset fetches beside them. */
function harness(committedAt: () => number) {
  const listeners = new Map<string, (notice: CommitNotice) => void>();
  const notices: Pick<CommitNotices, 'listen'> = {
    listen: async (group, onNotice) => {
      listeners.set(group, onNotice);
      return () => listeners.delete(group);
    },
  };
  let fetches = 0;
  const groups = { committed: async () => { fetches += 1; return new Map([[0, committedAt()]]); } } as unknown as Groups;
  const closing = new Signal();
  const watch = new CommitWatch(groups, closing, () => false, notices);
  return {
    watch,
    fetches: () => fetches,
    tell: (notice: CommitNotice) => listeners.get(notice.group)?.(notice),
    listening: (group: string) => listeners.has(group),
    close: () => {
      watch.close();
      closing.notify();
    },
  };
}

describe('CommitWatch told of commits', () => {
  it('answers a waiter from a notice, without fetching again', async () => {
    const h = harness(() => 3);
    const waiting = h.watch.wait('g', 'memory.events', 0, 7, 60_000);
    await vi.waitFor(() => expect(h.listening('g')).toBe(true));
    const fetched = h.fetches();
    h.tell({ group: 'g', topic: 'memory.events', partition: 0, next: 8 });
    await expect(waiting).resolves.toBe(true);
    expect(h.fetches()).toBe(fetched);
    h.close();
  });

  it('answers a later waiter for a position already told at once, with no fetch at all', async () => {
    const h = harness(() => 3);
    const first = h.watch.wait('g', 'memory.events', 0, 7, 60_000);
    await vi.waitFor(() => expect(h.listening('g')).toBe(true));
    h.tell({ group: 'g', topic: 'memory.events', partition: 0, next: 20 });
    await first;
    const fetched = h.fetches();
    await expect(h.watch.wait('g', 'memory.events', 0, 19, 0)).resolves.toBe(true);
    expect(h.fetches()).toBe(fetched);
    h.close();
  });

  it('ignores notices of another group, topic or partition, and of a position not past the offset', async () => {
    const h = harness(() => 3);
    const waiting = h.watch.wait('g', 'memory.events', 0, 7, 300);
    await vi.waitFor(() => expect(h.listening('g')).toBe(true));
    h.tell({ group: 'g', topic: 'memory.events', partition: 1, next: 50 });
    h.tell({ group: 'g', topic: 'memory.commands', partition: 0, next: 50 });
    h.tell({ group: 'g', topic: 'memory.events', partition: 0, next: 7 });
    await expect(waiting).resolves.toBe(false);
    h.close();
  });

  it('still answers from the offsets when a notice was lost', async () => {
    let committed = 3;
    const h = harness(() => committed);
    const waiting = h.watch.wait('g', 'memory.events', 0, 7, 60_000);
    committed = 8;
    await expect(waiting).resolves.toBe(true);
    h.close();
  });
});
