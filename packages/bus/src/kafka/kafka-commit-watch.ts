/**
 * `waitForCommitted` for many callers at once. With commit notices (design §9), a group's
 * commits are told to this process as they happen and a waiter is answered from them; one loop
 * per group still fetches the group's offsets while anyone waits on it, but seldom — notices
 * may be lost (a reconnect), and a group committed before this process listened. Without
 * notices the loop fetches every few milliseconds. Either way every waiter of a group is
 * answered from the same fetch, so concurrent requests add no fetches of their own.
 */
import type { CommitNotice, CommitNotices } from '../port.ts';
import { Signal } from '../signal.ts';
import type { Groups } from './kafka-groups.ts';

/** Without notices: a write's acknowledgement waits for this; one fetch per group per tick serves all. */
const POLL_INTERVAL_MS = 5;

/**
 * With notices: only what a lost notice can delay a waiter by. Under a steady synchronous load
 * some write always waits, so this is the fetch rate per group that load pays (the read-your-
 * writes wait's offset reads were about ten requests per write at 5 ms: docs/sizing.md).
 */
const FALLBACK_POLL_MS = 100;

/**
 * How long a commit told or fetched answers a wait that starts later without asking Kafka (with
 * notices only): the projector's notice often arrives before the API begins to wait for it. Short,
 * because a group reset by another process (a replay) moves its offsets back without a notice.
 */
const SEEN_TRUST_MS = 1_000;

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

interface Watched {
  waiters: Set<Waiter>;
  /** Per topic and partition, the committed offset last seen: the furthest told, or what a fetch answered, and when. */
  seen: Map<string, Map<number, { next: number; at: number }>>;
  /** Wakes the loop before its next fetch: a waiter whose deadline is sooner arrived. */
  wake: Signal;
  /** When the loop fetches next (performance.now()); undefined while no loop runs. */
  nextFetch: number | undefined;
}

export class CommitWatch {
  private readonly watched = new Map<string, Watched>();
  /** How to stop each group's listening, once it listens. */
  private readonly stops: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly groups: Groups,
    /** Notified when the bus closes: waiting ends at once, answering false. */
    private readonly closing: Signal,
    private readonly isClosing: () => boolean,
    private readonly notices?: Pick<CommitNotices, 'listen'>,
  ) {}

  /** Resolves true once the group committed past `offset`, false at the deadline or on close. */
  wait(kafkaGroup: string, kafkaTopic: string, partition: number, offset: number, timeoutMs: number): Promise<boolean> {
    const watched = this.watch(kafkaGroup);
    const seen = watched.seen.get(kafkaTopic)?.get(partition);
    if (this.notices !== undefined && seen !== undefined && seen.next > offset && performance.now() - seen.at <= SEEN_TRUST_MS) return Promise.resolve(true);
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = <T>(answer: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        watched.waiters.delete(waiter);
        answer(value);
      };
      const waiter: Waiter = { kafkaTopic, partition, offset, deadline: performance.now() + timeoutMs, resolve: settle(resolve), reject: settle(reject) };
      // The deadline holds even while one offset fetch hangs: a broker in controlled shutdown or
      // frozen can keep a single fetch (its own retries included) far past it, and the request
      // waiting here would go unanswered (the fault suite's rolling restart saw 30 s and more).
      // The grace lets a fetch already under way answer a short wait (a timeout of 0 asks
      // "committed now?"), which the loop below does at the deadline when fetches flow.
      timer = setTimeout(() => waiter.resolve(false), timeoutMs + HANGING_FETCH_GRACE_MS);
      watched.waiters.add(waiter);
      if (watched.nextFetch === undefined) {
        watched.nextFetch = performance.now();
        void this.poll(kafkaGroup, watched);
      } else if (waiter.deadline < watched.nextFetch) {
        watched.wake.notify();
      }
    });
  }

  /** This process moved the group's offsets (a reset, a replay's hand-back, a transient group deleted): what was seen no longer holds. */
  forget(kafkaGroup: string): void {
    this.watched.get(kafkaGroup)?.seen.clear();
  }

  /** Stops listening for notices (a listen still under way stops once it is). */
  close(): void {
    this.closed = true;
    for (const stop of this.stops.splice(0)) stop();
  }

  private watch(kafkaGroup: string): Watched {
    let watched = this.watched.get(kafkaGroup);
    if (watched !== undefined) return watched;
    watched = { waiters: new Set(), seen: new Map(), wake: new Signal(), nextFetch: undefined };
    this.watched.set(kafkaGroup, watched);
    const entry = watched;
    if (this.notices !== undefined) {
      // Not awaited: until the channel listens, the loop's fetches answer (a channel that is
      // down only makes waits as slow as the fallback poll).
      this.notices.listen(kafkaGroup, (notice) => this.told(entry, notice)).then(
        (stop) => (this.closed ? stop() : this.stops.push(stop)),
        () => undefined,
      );
    }
    return watched;
  }

  private told(watched: Watched, notice: CommitNotice): void {
    let topic = watched.seen.get(notice.topic);
    if (topic === undefined) watched.seen.set(notice.topic, (topic = new Map()));
    topic.set(notice.partition, { next: Math.max(notice.next, topic.get(notice.partition)?.next ?? -1), at: performance.now() });
    for (const w of watched.waiters) if (w.kafkaTopic === notice.topic && w.partition === notice.partition && notice.next > w.offset) w.resolve(true);
  }

  /** A fetch answers where the group is now: it replaces what was seen (offsets can move back: a reset). */
  private fetched(watched: Watched, kafkaTopic: string, committed: ReadonlyMap<number, number>): void {
    const at = performance.now();
    watched.seen.set(kafkaTopic, new Map([...committed].map(([partition, next]) => [partition, { next, at }])));
  }

  private async poll(kafkaGroup: string, watched: Watched): Promise<void> {
    const { waiters } = watched;
    try {
      while (waiters.size > 0 && !this.isClosing()) {
        for (const topic of new Set([...waiters].map((w) => w.kafkaTopic))) this.fetched(watched, topic, await this.groups.committed(kafkaGroup, topic));
        const now = performance.now();
        for (const w of waiters) {
          const done = (watched.seen.get(w.kafkaTopic)?.get(w.partition)?.next ?? -1) > w.offset;
          if (done || now >= w.deadline) w.resolve(done);
        }
        if (waiters.size === 0) break;
        // The next fetch: the interval, or sooner when a waiter's deadline comes first (its
        // last answer is a fetch's, as without notices).
        const interval = this.notices === undefined ? POLL_INTERVAL_MS : FALLBACK_POLL_MS;
        const soonest = Math.min(now + interval, ...[...waiters].map((w) => w.deadline));
        watched.nextFetch = soonest;
        await Signal.any([this.closing, watched.wake], soonest - now);
      }
    } catch (err) {
      // The offsets could not be read (the broker is down): every waiter learns it.
      for (const w of waiters) w.reject(err);
    } finally {
      watched.nextFetch = undefined;
      // A closing bus answers whoever is left: not committed.
      for (const w of waiters) w.resolve(false);
    }
  }
}
