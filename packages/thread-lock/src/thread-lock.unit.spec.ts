import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { adoptFileWriteLocks, fileWriteLock, shareFileWriteLocks } from './file-write-locks.ts';
import { ThreadLock } from './thread-lock.ts';

/**
 * A thread that takes the lock (the same protocol: cell 0 from 0 to 1), marks cell 1 while it
 * holds it, and lets go on its own a little later: the waiting thread cannot tell it to.
 */
const HOLDER = `
const { parentPort, workerData } = require('node:worker_threads');
const cell = new Int32Array(workerData.lock);
const marks = new Int32Array(workerData.marks);
while (Atomics.compareExchange(cell, 0, 0, 1) !== 0) Atomics.wait(cell, 0, 1, 100);
parentPort.postMessage('held');
setTimeout(() => {
  Atomics.store(marks, 0, 1);
  Atomics.store(cell, 0, 0);
  Atomics.notify(cell, 0, 1);
}, 50);
`;

describe('ThreadLock', () => {
  it('makes another thread wait until the holder lets go', async () => {
    const lock = new ThreadLock();
    const marks = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(HOLDER, { eval: true, workerData: { lock: lock.shared, marks: marks.buffer } });
    try {
      await new Promise<void>((resolve) => worker.once('message', () => resolve()));
      // Runs only after the holder's release, which comes after its mark.
      const seen = lock.run(() => Atomics.load(marks, 0));
      expect(seen).toBe(1);
    } finally {
      await worker.terminate();
    }
  });

  it('lets a thread take the lock again inside its own hold', () => {
    const lock = new ThreadLock();
    expect(lock.run(() => lock.run(() => 'inner'))).toBe('inner');
    // And it is free afterwards.
    expect(lock.run(() => 'again')).toBe('again');
  });

  it('is released when the work throws', () => {
    const lock = new ThreadLock();
    expect(() => lock.run(() => {
      throw new Error('boom');
    })).toThrow('boom');
    expect(lock.run(() => 'free')).toBe('free');
  });
});

describe('file write locks', () => {
  it('gives one lock per file, whatever the spelling of its path, and none to :memory:', () => {
    expect(fileWriteLock('/tmp/gm-lock-test/a.db')).toBe(fileWriteLock('/tmp/gm-lock-test/./b/../a.db'));
    expect(fileWriteLock('/tmp/gm-lock-test/a.db')).not.toBe(fileWriteLock('/tmp/gm-lock-test/c.db'));
    expect(fileWriteLock(':memory:')).toBeUndefined();
  });

  it('shares the same memory with a thread that adopts them', () => {
    const lock = fileWriteLock('/tmp/gm-lock-test/shared.db');
    const shared = shareFileWriteLocks();
    const entry = shared.find(([path]) => path === '/tmp/gm-lock-test/shared.db');
    expect(entry?.[1]).toBe(lock?.shared);
    adoptFileWriteLocks(shared);
    expect(fileWriteLock('/tmp/gm-lock-test/shared.db')?.shared).toBe(lock?.shared);
  });
});
