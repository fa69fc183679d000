import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testKeyValueStore } from '@gm/testing/contracts/key-value';
import type { KeyValueHarness } from '@gm/testing/contracts/key-value';
import { testPolicyRepository } from '@gm/testing/contracts/policy-store';
import type { KeyValueStore } from '../port.ts';
import { createSqliteKeyValueStore } from './sqlite-key-value.ts';

async function harness(clock: 'injected' | 'real'): Promise<KeyValueHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-key-value-'));
  const file = join(dir, 'state.db');
  let now = Date.UTC(2030, 0, 1);
  const opened: KeyValueStore[] = [];
  const open = (): KeyValueStore => {
    const store = createSqliteKeyValueStore(clock === 'injected' ? { file, now: () => now } : { file });
    opened.push(store);
    return store;
  };
  return {
    store: open(),
    reopen: async () => open(),
    cleanup: async () => {
      for (const store of opened) await store.close();
      await rm(dir, { recursive: true, force: true });
    },
    ...(clock === 'injected' ? { advanceClock: (ms: number) => void (now += ms), now: () => now } : {}),
  };
}

testKeyValueStore('sqlite, injected clock', () => harness('injected'));
// The real-clock run exercises the path the Redis adapter will take (short TTLs, bounded wait).
testKeyValueStore('sqlite, real clock', () => harness('real'));
testPolicyRepository('sqlite', () => harness('injected'));

// Redis behaviour the port does not spell out, kept here so the embedded runtime fails where
// Redis would instead of silently mixing kinds under one key.
describe('sqlite key-value store, Redis type rules', () => {
  it('refuses set and sorted-set writes on a key of another kind; set replaces any kind', async () => {
    const h = await harness('injected');
    onTestFinished(() => h.cleanup());
    const { store } = h;
    await store.set('str', '1');
    await store.sadd('set', ['a']);
    await expect(store.sadd('str', ['a'])).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    await expect(store.zadd('set', 1, 'a')).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    await expect(store.incr('set')).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    expect(await store.set('set', 'now a string')).toBe(true);
    expect(await store.smembers('set')).toEqual([]);
    expect(await store.keys('s')).toEqual(['set', 'str']);
  });

  it('rejects a TTL that is not a positive number', async () => {
    const h = await harness('injected');
    onTestFinished(() => h.cleanup());
    await expect(h.store.set('k', 'v', { ttlMs: 0 })).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    expect(await h.store.get('k')).toBeNull();
  });
});
