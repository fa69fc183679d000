/**
 * `waitForCommitted` for many callers at once: one loop per consumer group fetches the group's
 * offsets every few milliseconds while anyone waits on it and answers every waiter from the
 * same fetch, so a commit is noticed within a tick and concurrent requests add no fetches of
 * their own (a waiter polling with back-off noticed it up to 100 ms late).
 */
import { Signal } from '../signal.ts';
import type { Groups } from './kafka-groups.ts';

/** Short: a write's acknowledgement waits for this; one fetch per group per tick serves all. */
const POLL_INTERVAL_MS = 5;

/** How long past its deadline a waiter waits for a fetch that does not return. */
const HANGING_FETCH_GRACE_MS = 1_000;

interface Waiter {
  kafkaTopic: string;
  partition: number;
  offset: number;
  deadline: number;
  resolve: (committed: boolean) => void;
  reject: (err: unknown) => void;
}

export class CommitWatch {
  private readonly waiters = new Map<string, Set<Waiter>>();

  constructor(
    private readonly groups: Groups,
    /** Notified when the bus closes: waiting ends at once, answering false. */
    private readonly closing: Signal,
    private readonly isClosing: () => boolean,
  ) {}

  /** Resolves true once the group committed past `offset`, false at the deadline or on close. */
  wait(kafkaGroup: string, kafkaTopic: string, partition: number, offset: number, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = <T>(answer: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        waiting?.delete(waiter);
        answer(value);
      };
      const waiter: Waiter = { kafkaTopic, partition, offset, deadline: performance.now() + timeoutMs, resolve: settle(resolve), reject: settle(reject) };
      // The deadline holds even while one offset fetch hangs: a broker in controlled shutdown or
      // frozen can keep a single fetch (its own retries included) far past it, and the request
      // waiting here would go unanswered (the fault suite's rolling restart saw 30 s and more).
      // The grace lets a fetch already under way answer a short wait (a timeout of 0 asks
      // "committed now?"), which the poll below does at the deadline when fetches flow.
      timer = setTimeout(() => waiter.resolve(false), timeoutMs + HANGING_FETCH_GRACE_MS);
      let waiting = this.waiters.get(kafkaGroup);
      if (waiting !== undefined) {
        waiting.add(waiter);
        return;
      }
      waiting = new Set([waiter]);
      this.waiters.set(kafkaGroup, waiting);
      void this.poll(kafkaGroup, waiting);
    });
  }

  private async poll(kafkaGroup: string, waiting: Set<Waiter>): Promise<void> {
    try {
      while (waiting.size > 0 && !this.isClosing()) {
        const committed = new Map<string, Map<number, number>>();
        for (const topic of new Set([...waiting].map((w) => w.kafkaTopic))) committed.set(topic, await this.groups.committed(kafkaGroup, topic));
        const now = performance.now();
        for (const w of waiting) {
          const done = (committed.get(w.kafkaTopic)?.get(w.partition) ?? -1) > w.offset;
          if (done || now >= w.deadline) {
            waiting.delete(w);
            w.resolve(done);
          }
        }
        if (waiting.size > 0) await Signal.any([this.closing], POLL_INTERVAL_MS);
      }
    } catch (err) {
      // The offsets could not be read (the broker is down): every waiter learns it.
      for (const w of waiting) w.reject(err);
      waiting.clear();
    } finally {
      this.waiters.delete(kafkaGroup);
      // A closing bus answers whoever is left: not committed.
      for (const w of waiting) w.resolve(false);
    }
  }
}
