import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { engineEndpoint } from '@gm/testing/engines';
import { createRedisKeyValueStore } from './redis-key-value.ts';

/** The bytes of every file in a Redis's persistence directory and its AOF directory. */
async function persistedBytes(url: string): Promise<Buffer> {
  const admin = new Redis(url);
  try {
    const [, dir] = (await admin.config('GET', 'dir')) as [string, string];
    const [, aofDir] = (await admin.config('GET', 'appenddirname')) as [string, string];
    const files = [dir, path.join(dir, aofDir)].flatMap((d) => readdirSync(d, { withFileTypes: true })
      .filter((e) => e.isFile()).map((e) => path.join(d, e.name)));
    return Buffer.concat(files.map((f) => readFileSync(f)));
  } finally {
    admin.disconnect();
  }
}

const freePort = (): Promise<number> => new Promise((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    server.close(() => resolve(port));
  });
});

/** A Redis of this test's own, with `args`, in a directory removed afterwards. */
async function ownRedis(args: string[]): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gm-redis-'));
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', ...args], { stdio: 'ignore' });
  onTestFinished(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { retryStrategy: (n) => (n > 100 ? null : 50), maxRetriesPerRequest: null });
  probe.on('error', () => undefined); // refused until the server listens: the ping waits for it
  try {
    await probe.ping();
  } finally {
    probe.disconnect();
  }
  return url;
}

describe('erasure from Redis\'s files (design §8.4)', () => {
  it('rewrites the append-only file so a deleted value is in no file, and says erased', async () => {
    const url = engineEndpoint('redis');
    const store = createRedisKeyValueStore({ url, keyPrefix: `t:${randomUUID()}:` });
    onTestFinished(() => store.close());
    const canary = `Quokkabond-${randomUUID()}`;
    await store.set('record', canary);
    await store.del(['record']);
    // The control: the deleted value is still in the AOF, which replays every SET.
    await expect.poll(async () => (await persistedBytes(url)).includes(canary), { timeout: 10_000 }).toBe(true);

    expect(await store.eraseDeleted()).toBe('erased');
    expect((await persistedBytes(url)).includes(canary)).toBe(false);
  });

  it('shares one rewrite between erasures asked for at once, each waiting for a rewrite begun after its ask', async () => {
    const url = await ownRedis(['--appendonly', 'yes']);
    const stores = [0, 1, 2].map(() => createRedisKeyValueStore({ url }));
    onTestFinished(async () => {
      await Promise.all(stores.map((s) => s.close()));
    });
    const canaries = stores.map(() => `Vexillary-${randomUUID()}`);
    await Promise.all(stores.map(async (s, i) => {
      await s.set(`k${i}`, canaries[i] ?? '');
      await s.del([`k${i}`]);
    }));
    expect(await Promise.all(stores.map((s) => s.eraseDeleted()))).toEqual(['erased', 'erased', 'erased']);
    const bytes = await persistedBytes(url);
    for (const canary of canaries) expect(bytes.includes(canary), canary).toBe(false);
  });

  it('rewrites every replica\'s files too, once it has applied the deletion', async () => {
    const primary = await ownRedis(['--appendonly', 'yes', '--repl-diskless-sync-delay', '0']);
    const replica = await ownRedis(['--appendonly', 'yes', '--replicaof', '127.0.0.1', new URL(primary).port]);
    const store = createRedisKeyValueStore({ url: primary });
    onTestFinished(() => store.close());
    const canary = `Zumbrota-${randomUUID()}`;
    await store.set('record', canary);
    // The control: the replica has it in its files (a full sync's RDB, then its own AOF).
    await expect.poll(async () => (await persistedBytes(replica)).includes(canary), { timeout: 15_000 }).toBe(true);
    await store.del(['record']);

    expect(await store.eraseDeleted()).toBe('erased');
    expect((await persistedBytes(primary)).includes(canary)).toBe(false);
    expect((await persistedBytes(replica)).includes(canary)).toBe(false);
  });

  it('says memory_only when Redis refuses the rewrite (a managed Redis that renamed the command)', async () => {
    const url = await ownRedis(['--appendonly', 'yes', '--rename-command', 'BGREWRITEAOF', '']);
    const store = createRedisKeyValueStore({ url });
    onTestFinished(() => store.close());
    await store.set('k', 'v');
    await store.del(['k']);
    expect(await store.eraseDeleted()).toBe('memory_only');
  });

  it('has nothing to rewrite on a Redis that keeps no files: erased', async () => {
    const url = await ownRedis(['--appendonly', 'no']);
    const store = createRedisKeyValueStore({ url });
    onTestFinished(() => store.close());
    await store.set('k', 'v');
    await store.del(['k']);
    expect(await store.eraseDeleted()).toBe('erased');
  });
});
