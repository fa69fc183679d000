import { describe, expect, it, onTestFinished } from 'vitest';
import type { KeyValueStore } from '@gm/state-store';
import { eventually } from '../eventually.ts';

/**
 * What an adapter under test hands the suite. Every test calls the factory once, so each gets
 * its own empty store (a Redis harness isolates with a key prefix or database of its own).
 */
export interface KeyValueHarness {
  store: KeyValueStore;
  /** Closes every instance handed out (including reopened ones) and deletes what it made. */
  cleanup: () => Promise<void>;
  /**
   * A new instance over the same storage; the suite closes `store` before calling it.
   * Optional only so throwaway fakes type-check: without it the durability test fails.
   */
  reopen?: () => Promise<KeyValueStore>;
  /**
   * Moves the store's clock forward. Stores on real time (Redis) omit it: TTL tests then use
   * the same short TTL and wait, bounded, until it has really passed (see letShortTtlPass).
   */
  advanceClock?: (ms: number) => void | Promise<void>;
  /** The store's clock (epoch ms) when it is injected; real-time stores omit it (Date.now). */
  now?: () => number;
}

export type KeyValueFactory = () => Promise<KeyValueHarness>;

/** Short enough to wait for on real time; only ever asserted as "has expired". */
const SHORT_TTL_MS = 100;
/** Long enough never to pass during a test, on any clock. */
const LONG_TTL_MS = 60 * 60_000;
const EXPIRY_WAIT_LIMIT_MS = 10_000;
const SENTINEL = 'sentinel:short-ttl';

/**
 * TTL tests write every key they expect to expire with SHORT_TTL_MS, then a sentinel with the
 * same TTL, then call this. With an injected clock it jumps past the TTL; on real time it
 * polls until the sentinel is gone. Either way, once the sentinel has expired so has every key
 * written before it — without a fixed sleep and without asserting anything about timing.
 */
async function letShortTtlPass(harness: KeyValueHarness): Promise<void> {
  if (harness.advanceClock !== undefined) await harness.advanceClock(SHORT_TTL_MS + 1);
  await eventually(`a ${SHORT_TTL_MS} ms TTL to pass`, async () => (await harness.store.get(SENTINEL)) === null, EXPIRY_WAIT_LIMIT_MS);
}

const armSentinel = (store: KeyValueStore) => store.set(SENTINEL, '1', { ttlMs: SHORT_TTL_MS });

/** Runs the shared key-value semantics (a Redis subset) against one adapter. */
export function testKeyValueStore(adapterName: string, factory: KeyValueFactory): void {
  describe(`KeyValueStore contract: ${adapterName}`, () => {
    async function open(): Promise<KeyValueHarness> {
      const harness = await factory();
      onTestFinished(() => harness.cleanup());
      return harness;
    }

    it('get returns what set stored, the latest write wins, and a missing key is null', async () => {
      const { store } = await open();
      expect(await store.set('greeting', '{"text":"héllo ✓"}')).toBe(true);
      expect(await store.get('greeting')).toBe('{"text":"héllo ✓"}');
      expect(await store.set('greeting', 'second')).toBe(true);
      expect(await store.get('greeting')).toBe('second');
      await store.set('empty', '');
      expect(await store.get('empty')).toBe('');
      expect(await store.get('missing')).toBeNull();
    });

    it('set with nx writes only when the key is absent', async () => {
      const { store } = await open();
      expect(await store.set('lock', 'owner-1', { nx: true })).toBe(true);
      expect(await store.set('lock', 'owner-2', { nx: true })).toBe(false);
      expect(await store.get('lock')).toBe('owner-1');
      await store.sadd('a-set', ['m']);
      expect(await store.set('a-set', 'v', { nx: true })).toBe(false);
      expect(await store.smembers('a-set')).toEqual(['m']);
    });

    it('pipeline runs its writes in order and answers each as its method would', async () => {
      const { store } = await open();
      const results = await store.pipeline([
        { op: 'set', key: 'lock', value: 'a', nx: true },
        { op: 'set', key: 'lock', value: 'b', nx: true },
        { op: 'setIfVersionAtLeast', key: 'rec', value: '{"version":2}', version: 2 },
        { op: 'setIfVersionAtLeast', key: 'rec', value: '{"version":1}', version: 1 },
        { op: 'sadd', key: 'members', members: ['x', 'y'] },
        { op: 'srem', key: 'members', members: ['y', 'z'] },
        { op: 'sadd', key: 'members', members: [] },
        { op: 'zadd', key: 'due', score: 5, member: 'm' },
        { op: 'zrem', key: 'due', members: ['m', 'n'] },
        { op: 'incr', key: 'n' },
        { op: 'incr', key: 'n' },
        { op: 'set', key: 'gone', value: '1' },
        { op: 'del', keys: ['gone', 'never'] },
      ]);
      expect(results).toEqual([true, false, true, false, 2, 1, 0, null, 1, 1, 2, true, 1]);
      expect(await store.get('lock')).toBe('a');
      expect(await store.get('rec')).toBe('{"version":2}');
      expect(await store.smembers('members')).toEqual(['x']);
      expect(await store.zrangeByScore('due', -Infinity, Infinity, 10)).toEqual([]);
      expect(await store.get('n')).toBe('2');
      expect(await store.get('gone')).toBeNull();
      expect(await store.pipeline([])).toEqual([]);
    });

    it('pipeline checks every write first: one bad argument and nothing is written', async () => {
      const { store } = await open();
      await expect(store.pipeline([{ op: 'set', key: 'a', value: '1' }, { op: 'zadd', key: 'z', score: Number.NaN, member: 'm' }]))
        .rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      await expect(store.pipeline([{ op: 'set', key: 'a', value: '1' }, { op: 'set', key: 'b', value: '1', ttlMs: 0 }]))
        .rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      expect(await store.mget(['a', 'b', 'z'])).toEqual([null, null, null]);
    });

    it('pipeline refuses a write to a key of another type, as the single write does', async () => {
      const { store } = await open();
      await store.sadd('a-set', ['m']);
      await expect(store.pipeline([{ op: 'incr', key: 'a-set' }])).rejects.toThrow(/WRONGTYPE/);
      expect(await store.smembers('a-set')).toEqual(['m']);
    });

    it('mget answers in the order asked, null for missing keys', async () => {
      const { store } = await open();
      await store.set('a', '1');
      await store.set('c', '3');
      expect(await store.mget(['c', 'missing', 'a', 'c'])).toEqual(['3', null, '1', '3']);
      expect(await store.mget([])).toEqual([]);
    });

    it('hides a key from every read once its TTL has passed, and only that key', async () => {
      const harness = await open();
      const { store } = harness;
      await store.set('ttl:long', 'long', { ttlMs: LONG_TTL_MS });
      await store.set('ttl:none', 'none');
      await store.set('ttl:short', 'short', { ttlMs: SHORT_TTL_MS });
      await armSentinel(store);
      await letShortTtlPass(harness);

      expect(await store.get('ttl:short')).toBeNull();
      expect(await store.mget(['ttl:short', 'ttl:long', 'ttl:none'])).toEqual([null, 'long', 'none']);
      expect(await store.exists(['ttl:short'])).toBe(0);
      expect(await store.keys('ttl:')).toEqual(['ttl:long', 'ttl:none']);
      expect(await store.del(['ttl:short'])).toBe(0);
      expect(await store.exists(['ttl:long', 'ttl:none'])).toBe(2);
    });

    it('treats an expired key as absent for nx, incr and versioned writes', async () => {
      const harness = await open();
      const { store } = harness;
      await store.set('lock', 'old-owner', { ttlMs: SHORT_TTL_MS });
      await store.set('counter', '41', { ttlMs: SHORT_TTL_MS });
      await store.set('record', '{"version":9}', { ttlMs: SHORT_TTL_MS });
      await armSentinel(store);
      await letShortTtlPass(harness);

      expect(await store.set('lock', 'new-owner', { nx: true })).toBe(true);
      expect(await store.get('lock')).toBe('new-owner');
      expect(await store.incr('counter')).toBe(1);
      expect(await store.setIfVersionAtLeast('record', '{"version":1}', 1)).toBe(true);
      expect(await store.get('record')).toBe('{"version":1}');
    });

    it('a plain set replaces an earlier TTL: the new value does not expire', async () => {
      const harness = await open();
      const { store } = harness;
      await store.set('session', 'temporary', { ttlMs: SHORT_TTL_MS });
      await store.set('session', 'permanent');
      await armSentinel(store);
      await letShortTtlPass(harness);
      expect(await store.get('session')).toBe('permanent');
    });

    it('setIfVersionAtLeast writes when absent or when the stored version is not higher', async () => {
      const { store } = await open();
      const v = (version: number, tag: string) => JSON.stringify({ version, tag });
      expect(await store.setIfVersionAtLeast('rec', v(5, 'first'), 5)).toBe(true);
      expect(await store.setIfVersionAtLeast('rec', v(4, 'stale'), 4)).toBe(false);
      expect(await store.get('rec')).toBe(v(5, 'first'));
      expect(await store.setIfVersionAtLeast('rec', v(5, 'redelivered'), 5)).toBe(true);
      expect(await store.get('rec')).toBe(v(5, 'redelivered'));
      expect(await store.setIfVersionAtLeast('rec', v(7, 'newer'), 7)).toBe(true);
      expect(await store.get('rec')).toBe(v(7, 'newer'));
    });

    it('setIfVersionAtLeast never overwrites a value without a numeric version', async () => {
      const { store } = await open();
      for (const stored of ['not json', '{"version":"3"}', '{"tag":"unversioned"}', '[1,2]']) {
        await store.set('rec', stored);
        expect(await store.setIfVersionAtLeast('rec', '{"version":100}', 100), stored).toBe(false);
        expect(await store.get('rec')).toBe(stored);
      }
    });

    it('setIfVersionAtLeast is atomic: concurrent writers leave the highest version', async () => {
      const { store } = await open();
      // A fixed permutation of 1..24, so the highest version is neither first nor last.
      const versions = Array.from({ length: 24 }, (_, i) => ((i * 7) % 24) + 1);
      await Promise.all(versions.map((n) => store.setIfVersionAtLeast('rec', JSON.stringify({ version: n }), n)));
      expect(await store.get('rec')).toBe(JSON.stringify({ version: 24 }));
    });

    it('del removes keys of every kind and counts the keys it removed', async () => {
      const { store } = await open();
      await store.set('s', 'v');
      await store.sadd('set', ['a', 'b']);
      await store.zadd('zset', 1, 'a');
      expect(await store.del(['s', 'set', 'zset', 'missing'])).toBe(3);
      expect(await store.exists(['s', 'set', 'zset'])).toBe(0);
      expect(await store.smembers('set')).toEqual([]);
      expect(await store.zrangeByScore('zset', -Infinity, Infinity, 10)).toEqual([]);
      expect(await store.del(['s', 'set', 'zset'])).toBe(0);
      expect(await store.del([])).toBe(0);
    });

    it('exists counts the live keys of every kind', async () => {
      const { store } = await open();
      await store.set('s', 'v');
      await store.sadd('set', ['a']);
      await store.zadd('zset', 1, 'a');
      expect(await store.exists(['s', 'set', 'zset', 'missing'])).toBe(3);
      expect(await store.exists(['missing'])).toBe(0);
      expect(await store.exists([])).toBe(0);
    });

    it('sets add and remove members, report how many changed, and vanish when emptied', async () => {
      const { store } = await open();
      expect(await store.sadd('tags', ['b', 'a', 'a'])).toBe(2);
      expect(await store.sadd('tags', ['b', 'c'])).toBe(1);
      expect([...(await store.smembers('tags'))].sort()).toEqual(['a', 'b', 'c']);
      expect(await store.srem('tags', ['a', 'x'])).toBe(1);
      expect([...(await store.smembers('tags'))].sort()).toEqual(['b', 'c']);
      expect(await store.sadd('tags', [])).toBe(0);
      expect(await store.srem('tags', [])).toBe(0);
      expect(await store.srem('tags', ['b', 'c'])).toBe(2);
      expect(await store.smembers('tags')).toEqual([]);
      expect(await store.exists(['tags'])).toBe(0);
      expect(await store.smembers('never-written')).toEqual([]);
    });

    it('sorted sets order by score then member, with inclusive bounds and a limit', async () => {
      const { store } = await open();
      await store.zadd('due', 30, 'c');
      await store.zadd('due', -5.5, 'neg');
      await store.zadd('due', 10, 'b');
      await store.zadd('due', 10, 'a');
      await store.zadd('due', 20.25, 'frac');
      const all = await store.zrangeByScore('due', -Infinity, Infinity, 100);
      expect(all).toEqual([
        { member: 'neg', score: -5.5 },
        { member: 'a', score: 10 },
        { member: 'b', score: 10 },
        { member: 'frac', score: 20.25 },
        { member: 'c', score: 30 },
      ]);
      expect((await store.zrangeByScore('due', 10, 30, 100)).map((e) => e.member)).toEqual(['a', 'b', 'frac', 'c']);
      expect((await store.zrangeByScore('due', 10, 20.25, 2)).map((e) => e.member)).toEqual(['a', 'b']);
      expect(await store.zrangeByScore('due', 31, 40, 10)).toEqual([]);
      expect(await store.zrangeByScore('missing', -Infinity, Infinity, 10)).toEqual([]);
      // The reverse reads the same set backwards: score then member, both descending.
      expect(await store.zrevrangeByScore('due', Infinity, -Infinity, 100)).toEqual([...all].reverse());
      expect((await store.zrevrangeByScore('due', 20.25, 10, 2)).map((e) => e.member)).toEqual(['frac', 'b']);
      expect((await store.zrevrangeByScore('due', 10, 10, 10)).map((e) => e.member)).toEqual(['b', 'a']);
      expect(await store.zrevrangeByScore('due', 9, 0, 10)).toEqual([]);
      expect(await store.zrevrangeByScore('due', 40, 0, 0)).toEqual([]);
      expect(await store.zrevrangeByScore('missing', Infinity, -Infinity, 10)).toEqual([]);
    });

    it('zadd moves an existing member; zrem counts removals and an emptied set vanishes', async () => {
      const { store } = await open();
      await store.zadd('due', 1, 'a');
      await store.zadd('due', 2, 'b');
      await store.zadd('due', 3, 'a');
      expect(await store.zrangeByScore('due', 0, 10, 10)).toEqual([
        { member: 'b', score: 2 },
        { member: 'a', score: 3 },
      ]);
      expect(await store.zrem('due', ['a', 'missing'])).toBe(1);
      expect(await store.zrem('due', [])).toBe(0);
      expect(await store.zrem('due', ['b'])).toBe(1);
      expect(await store.exists(['due'])).toBe(0);
      expect(await store.keys('due')).toEqual([]);
    });

    it('keys lists live keys of every kind by literal prefix, sorted', async () => {
      const { store } = await open();
      const strings = ['kp:a%b', 'kp:a_b', 'kp:axb', 'kp:aXb', 'kp:a*b', 'kp:a?b', 'kp:a[b]', 'kp:a\\b', 'kp:A', 'other:kp:a'];
      for (const key of strings) await store.set(key, 'v');
      await store.sadd('kp:set', ['m']);
      await store.zadd('kp:zset', 1, 'm');

      const expected = [...strings.filter((k) => k.startsWith('kp:')), 'kp:set', 'kp:zset'].sort();
      expect(await store.keys('kp:')).toEqual(expected);
      // Characters that are wildcards in SQL LIKE or Redis glob patterns match only themselves.
      expect(await store.keys('kp:a%')).toEqual(['kp:a%b']);
      expect(await store.keys('kp:a_')).toEqual(['kp:a_b']);
      expect(await store.keys('kp:a*')).toEqual(['kp:a*b']);
      expect(await store.keys('kp:a?')).toEqual(['kp:a?b']);
      expect(await store.keys('kp:a[')).toEqual(['kp:a[b]']);
      expect(await store.keys('kp:a\\')).toEqual(['kp:a\\b']);
      // Prefixes are case-sensitive.
      expect(await store.keys('kp:A')).toEqual(['kp:A']);
      expect(await store.keys('kp:x')).toEqual([]);
    });

    it('incr starts a missing key at 0, continues a stored integer, and refuses text', async () => {
      const { store } = await open();
      expect(await store.incr('hits')).toBe(1);
      expect(await store.incr('hits')).toBe(2);
      expect(await store.get('hits')).toBe('2');
      await store.set('answer', '41');
      expect(await store.incr('answer')).toBe(42);
      await store.set('label', 'abc');
      await expect(store.incr('label')).rejects.toThrow();
      expect(await store.get('label')).toBe('abc');
    });

    it('a pipeline incr adds `by`, gives the key it creates its ttlMs, and leaves an existing key\'s lifetime alone', async () => {
      const harness = await open();
      const { store } = harness;
      expect(await store.pipeline([
        { op: 'incr', key: 'window:short', by: 3, ttlMs: SHORT_TTL_MS },
        { op: 'incr', key: 'window:long', by: 2, ttlMs: LONG_TTL_MS },
        { op: 'incr', key: 'window:short', by: 4, ttlMs: LONG_TTL_MS },
      ])).toEqual([3, 2, 7]);
      // A later increment with a longer ttlMs does not extend the window it counts in.
      await armSentinel(store);
      await letShortTtlPass(harness);
      expect(await store.mget(['window:short', 'window:long'])).toEqual([null, '2']);
      expect(await store.pipeline([{ op: 'incr', key: 'window:short', by: 5, ttlMs: LONG_TTL_MS }])).toEqual([5]);
      await expect(store.pipeline([{ op: 'incr', key: 'window:bad', by: 0 }])).rejects.toThrow();
      await expect(store.pipeline([{ op: 'incr', key: 'window:bad', ttlMs: 0 }])).rejects.toThrow();
    });

    it('incr is atomic: concurrent increments each get a distinct value', async () => {
      const { store } = await open();
      const results = await Promise.all(Array.from({ length: 30 }, () => store.incr('concurrent')));
      expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      expect(await store.get('concurrent')).toBe('30');
    });

    it('ping answers true while open', async () => {
      const { store } = await open();
      expect(await store.ping()).toBe(true);
    });

    it('survives close and reopen', async () => {
      const harness = await open();
      // Fails loudly rather than passing silently: durability is part of the contract.
      if (harness.reopen === undefined) throw new Error(`${adapterName}: the harness must provide reopen()`);
      const { store } = harness;
      await store.set('plain', 'v1');
      await store.set('with-ttl', 'v2', { ttlMs: LONG_TTL_MS });
      await store.setIfVersionAtLeast('versioned', '{"version":3}', 3);
      await store.sadd('set', ['a', 'b']);
      await store.zadd('zset', 2, 'x');
      await store.incr('counter');
      await store.set('deleted', 'gone');
      await store.del(['deleted']);
      await store.close();

      const reopened = await harness.reopen();
      expect(await reopened.mget(['plain', 'with-ttl', 'versioned', 'deleted'])).toEqual(['v1', 'v2', '{"version":3}', null]);
      expect([...(await reopened.smembers('set'))].sort()).toEqual(['a', 'b']);
      expect(await reopened.zrangeByScore('zset', 0, 10, 10)).toEqual([{ member: 'x', score: 2 }]);
      expect(await reopened.incr('counter')).toBe(2);
      expect(await reopened.setIfVersionAtLeast('versioned', '{"version":2}', 2)).toBe(false);
    });
  });
}
