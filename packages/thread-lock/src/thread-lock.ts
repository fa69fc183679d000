/**
 * A mutex shared by the threads of one process, in shared memory (Atomics).
 *
 * Why not leave it to SQLite: a connection that finds a file's write lock taken sleeps in
 * SQLite's busy handler, 1 ms, then 2, then 5 and more, however soon the holder lets go. Two
 * threads writing one file with sub-millisecond transactions then spend most of their time
 * asleep. A waiter here wakes the moment the holder releases (Atomics.notify).
 *
 * Re-entrant within a thread: a write that runs inside another write of the same thread (a
 * transaction body calling another) does not wait for itself.
 */
const FREE = 0;
const HELD = 1;
/** A waiter re-checks this often even without a notify: a thread that died holding the lock never strands the others for longer. */
const RECHECK_MS = 100;

export class ThreadLock {
  private readonly cell: Int32Array;
  /** How deep this thread is inside the lock (not shared: each thread has its own object). */
  private depth = 0;

  constructor(readonly shared: SharedArrayBuffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)) {
    this.cell = new Int32Array(shared);
  }

  /** Runs `work` (synchronous) holding the lock; blocks this thread until it is free. */
  run<T>(work: () => T): T {
    if (this.depth > 0) return this.nested(work);
    while (Atomics.compareExchange(this.cell, 0, FREE, HELD) !== FREE) Atomics.wait(this.cell, 0, HELD, RECHECK_MS);
    try {
      return this.nested(work);
    } finally {
      Atomics.store(this.cell, 0, FREE);
      Atomics.notify(this.cell, 0, 1);
    }
  }

  private nested<T>(work: () => T): T {
    this.depth++;
    try {
      return work();
    } finally {
      this.depth--;
    }
  }
}
