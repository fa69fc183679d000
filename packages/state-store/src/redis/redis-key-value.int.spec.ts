import { randomUUID } from 'node:crypto';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testKeyValueStore } from '@gm/testing/contracts/key-value';
import type { KeyValueHarness } from '@gm/testing/contracts/key-value';
import { testPolicyRepository } from '@gm/testing/contracts/policy-store';
import { engineEndpoint } from '@gm/testing/engines';
import type { KeyValueStore } from '../port.ts';
import { createRedisKeyValueStore } from './redis-key-value.ts';

/** Deletes every key under `keyPrefix`, through a store of its own. */
async function deletePrefix(url: string, keyPrefix: string): Promise<void> {
  const admin = createRedisKeyValueStore({ url });
  try {
    const keys = await admin.keys(keyPrefix);
    if (keys.length > 0) await admin.del(keys);
  } finally {
    await admin.close();
  }
}

/** Each harness owns a fresh key prefix: tests share the server, never their keys. */
async function harness(url = engineEndpoint('redis')): Promise<KeyValueHarness & { reopen: () => Promise<KeyValueStore> }> {
  const keyPrefix = `t:${randomUUID()}:`;
  const opened: KeyValueStore[] = [];
  const open = (): KeyValueStore => {
    const store = createRedisKeyValueStore({ url, keyPrefix });
    opened.push(store);
    return store;
  };
  return {
    store: open(),
    reopen: async () => open(),
    cleanup: async () => {
      for (const store of opened) await store.close();
      await deletePrefix(engineEndpoint('redis'), keyPrefix);
    },
  };
}

async function open(url?: string): ReturnType<typeof harness> {
  const h = await harness(url);
  onTestFinished(() => h.cleanup());
  return h;
}

/** Rejects when `promise` has not settled in time, so a hang fails the test instead of stalling it. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits, bounded, until a short TTL set after the keys under test has really passed. */
async function letTtlPass(store: KeyValueStore, ttlMs: number): Promise<void> {
  await store.set('sentinel', '1', { ttlMs });
  await vi.waitFor(async () => expect(await store.get('sentinel')).toBeNull(), { timeout: 10_000, interval: 10 });
}

/**
 * A TCP relay in front of Redis that the test can cut and restore, to take Redis away from a
 * connected client without touching the shared server.
 */
async function startRelay(target: URL): Promise<{ url: string; cut: () => Promise<void>; restore: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const { port } = server.address() as AddressInfo;
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  onTestFinished(cut);
  return { url: `redis://127.0.0.1:${port}`, cut, restore: () => listen(port) };
}

testKeyValueStore('redis', () => harness());
testPolicyRepository('redis', () => harness());

describe('redis key-value store', () => {
  it('keeps the highest version when 50 writers on 10 connections race with interleaved versions', async () => {
    const h = await open();
    const stores = [h.store, ...(await Promise.all(Array.from({ length: 9 }, () => h.reopen())))];
    // All connected first, so every writer's read is in flight before any write lands.
    expect(await Promise.all(stores.map((store) => store.ping()))).toEqual(stores.map(() => true));
    // 13 is coprime with 50: a permutation of 1..50 that puts version 50 at index 23, in the
    // middle of its connection's writers, so lower versions are sent after it on that socket.
    const versions = Array.from({ length: 50 }, (_, i) => ((i * 13) % 50) + 1);
    const value = (version: number) => JSON.stringify({ version, writer: `w${version}` });
    const results = await Promise.all(
      versions.map((version, i) => (stores[i % stores.length] ?? h.store).setIfVersionAtLeast('rec', value(version), version)),
    );
    expect(results[versions.indexOf(50)]).toBe(true);
    expect(await h.store.get('rec')).toBe(value(50));
    expect(await h.store.setIfVersionAtLeast('rec', value(49), 49)).toBe(false);
  });

  it('a versioned write drops the TTL the key had, like a plain set', async () => {
    const { store } = await open();
    await store.set('rec', '{"version":1}', { ttlMs: 100 });
    expect(await store.setIfVersionAtLeast('rec', '{"version":2}', 2)).toBe(true);
    await letTtlPass(store, 100);
    expect(await store.get('rec')).toBe('{"version":2}');
  });

  it('refuses writes and reads on a key of another kind with MEM_INTERNAL', async () => {
    const { store } = await open();
    await store.set('str', '{"version":1}');
    await store.sadd('set', ['a']);
    await expect(store.sadd('str', ['a'])).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    await expect(store.zadd('set', 1, 'a')).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    await expect(store.incr('set')).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    await expect(store.setIfVersionAtLeast('set', '{"version":2}', 2)).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    await expect(store.smembers('str')).rejects.toMatchObject({ code: 'MEM_INTERNAL' });
    expect(await store.smembers('set')).toEqual(['a']);
    // SET replaces a key of any kind.
    expect(await store.set('set', 'now a string')).toBe(true);
    expect(await store.get('set')).toBe('now a string');
  });

  it('validates before asking Redis: TTL, score, incr of text, version', async () => {
    const { store } = await open();
    for (const ttlMs of [0, -1, Number.NaN, Infinity]) {
      await expect(store.set('k', 'v', { ttlMs })).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    }
    expect(await store.get('k')).toBeNull();
    await expect(store.zadd('z', Number.NaN, 'm')).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    await store.set('label', 'abc');
    await expect(store.incr('label')).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    await expect(store.setIfVersionAtLeast('rec', '{}', Number.NaN)).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    expect(await store.exists(['z', 'rec'])).toBe(0);
  });

  it('stores infinite scores and returns them', async () => {
    const { store } = await open();
    await store.zadd('due', Infinity, 'never');
    await store.zadd('due', -Infinity, 'always');
    await store.zadd('due', 0, 'now');
    expect(await store.zrangeByScore('due', -Infinity, Infinity, 10)).toEqual([
      { member: 'always', score: -Infinity },
      { member: 'now', score: 0 },
      { member: 'never', score: Infinity },
    ]);
  });

  it('isolates key prefixes: a store sees, lists and deletes only its own keys', async () => {
    const a = await open();
    const b = await open();
    await a.store.set('shared-name', 'a');
    await b.store.set('shared-name', 'b');
    expect(await a.store.get('shared-name')).toBe('a');
    expect(await b.store.keys('')).toEqual(['shared-name']);
    expect(await b.store.del(['shared-name'])).toBe(1);
    expect(await a.store.get('shared-name')).toBe('a');
  });

  it('fails closed with MEM_UNAVAILABLE when Redis is unreachable from the start', async () => {
    const { store } = await open('redis://127.0.0.1:1');
    const reads: Array<[string, () => Promise<unknown>]> = [
      ['get', () => store.get('k')],
      ['mget', () => store.mget(['k'])],
      ['exists', () => store.exists(['k'])],
      ['smembers', () => store.smembers('s')],
      ['zrangeByScore', () => store.zrangeByScore('z', 0, 1, 1)],
      ['zrevrangeByScore', () => store.zrevrangeByScore('z', 1, 0, 1)],
      ['keys', () => store.keys('')],
      ['setIfVersionAtLeast', () => store.setIfVersionAtLeast('rec', '{"version":1}', 1)],
      ['incr', () => store.incr('n')],
    ];
    for (const [name, read] of reads) {
      await expect(settledWithin(read(), 10_000), name).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    }
    expect(await settledWithin(store.ping(), 10_000)).toBe(false);
  });

  it('fails closed while a connected Redis is away, and recovers when it returns', async () => {
    const relay = await startRelay(new URL(engineEndpoint('redis')));
    const { store } = await open(relay.url);
    await store.set('k', 'before');
    expect(await store.get('k')).toBe('before');

    await relay.cut();
    // Never the value read before the outage, never null: an error the caller can retry on.
    await expect(settledWithin(store.get('k'), 10_000)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    await expect(settledWithin(store.set('k', 'during'), 10_000)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE' });
    expect(await store.ping()).toBe(false);

    await relay.restore();
    await vi.waitFor(async () => expect(await store.get('k')).toBe('before'), { timeout: 15_000, interval: 50 });
    expect(await store.ping()).toBe(true);
  });
});
