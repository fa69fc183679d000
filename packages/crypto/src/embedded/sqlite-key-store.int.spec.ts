import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSqliteBus, type Bus } from '@gm/bus';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { keysLogBytes, testKeyStore, type KeyStoreHarness } from '@gm/testing/contracts/key-store';
import type { KeyStore } from '../key-store.ts';
import { PSEUDONYM_KEY_ID, generateKey, kekId, wrapKey } from '../keys.ts';

const PSEUDONYM = { kid: PSEUDONYM_KEY_ID, key: randomBytes(32) };
import { openBusKeyStore } from '../kafka/bus-key-store.ts';
import { createSqliteKeyStore } from './sqlite-key-store.ts';

/** Every byte of every file in `dir` (database, WAL, shared memory). */
async function filesIn(dir: string): Promise<Buffer> {
  const names = await readdir(dir);
  return Buffer.concat(await Promise.all(names.map((name) => readFile(join(dir, name)))));
}

async function sqliteHarness(): Promise<KeyStoreHarness & { dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-key-store-'));
  const file = join(dir, 'keys.db');
  const opened: KeyStore[] = [];
  const open = async (): Promise<KeyStore> => {
    const store = createSqliteKeyStore({ file });
    opened.push(store);
    return store;
  };
  return {
    dir,
    store: await open(),
    open,
    persistedBytes: () => filesIn(dir),
    cleanup: async () => {
      for (const store of opened) await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

testKeyStore('sqlite', sqliteHarness);

// The topic-backed store on the embedded bus: the same fold the Kafka runtime uses.
testKeyStore('memory.keys on the sqlite bus', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gm-key-store-bus-'));
  const file = join(dir, 'bus.db');
  const reader = createSqliteBus({ file });
  const buses: Bus[] = [reader];
  const stores: KeyStore[] = [];
  const open = async (): Promise<KeyStore> => {
    const bus = createSqliteBus({ file });
    buses.push(bus);
    const store = await openBusKeyStore({ bus, partitions: 2 });
    stores.push(store);
    return store;
  };
  return {
    store: await open(),
    open,
    persistedBytes: () => keysLogBytes(reader),
    cleanup: async () => {
      for (const store of stores) await store.close();
      for (const bus of buses) await bus.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('sqlite key store', () => {
  it('physically removes a destroyed wrapped key from the database file and its WAL', async () => {
    const h = await sqliteHarness();
    onTestFinished(() => h.cleanup());
    const master = { kid: 'm1', key: randomBytes(32) };
    const wrapped = wrapKey('kek', generateKey(kekId(PSEUDONYM, 't1', 'alice')), master);
    await h.store.put(wrapped.kid, wrapped);
    expect((await filesIn(h.dir)).includes(wrapped.ct)).toBe(true);
    await h.store.tombstone(wrapped.kid);
    const after = await filesIn(h.dir);
    expect(after.includes(wrapped.ct)).toBe(false);
    expect(after.includes(wrapped.tag)).toBe(false);
  });

  it('works in memory (`:memory:`) for a single process', async () => {
    const store = createSqliteKeyStore({ file: ':memory:' });
    onTestFinished(() => store.close());
    const wrapped = wrapKey('kek', generateKey(kekId(PSEUDONYM, 't1', 'bob')), { kid: 'm1', key: randomBytes(32) });
    await store.put(wrapped.kid, wrapped);
    expect(await store.get(wrapped.kid)).toEqual({ status: 'present', wrapped });
    await store.tombstone(wrapped.kid);
    expect(await store.get(wrapped.kid)).toEqual({ status: 'destroyed' });
  });

  it('writes the puts of one turn together, refusing only the one whose key was destroyed', async () => {
    const h = await sqliteHarness();
    onTestFinished(() => h.cleanup());
    const master = { kid: 'm1', key: randomBytes(32) };
    const [a, b, c] = ['ann', 'ben', 'cal'].map((subject) => wrapKey('kek', generateKey(kekId(PSEUDONYM, 't1', subject)), master));
    if (a === undefined || b === undefined || c === undefined) throw new Error('three keys');
    await h.store.put(b.kid, b);
    await h.store.tombstone(b.kid);
    const results = await Promise.allSettled([h.store.put(a.kid, a), h.store.put(b.kid, b), h.store.put(c.kid, c)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(results[1]).toMatchObject({ reason: { code: 'MEM_CONFLICT' } });
    const reopened = await h.open();
    expect(await reopened.get(a.kid)).toEqual({ status: 'present', wrapped: a });
    expect(await reopened.get(b.kid)).toEqual({ status: 'destroyed' });
    expect(await reopened.get(c.kid)).toEqual({ status: 'present', wrapped: c });
  });

  /** A stored KEK, and another connection in the middle of a read: the checkpoint cannot empty the WAL under it. */
  async function keyUnderReader(subject: string) {
    const h = await sqliteHarness();
    onTestFinished(() => h.cleanup());
    const wrapped = wrapKey('kek', generateKey(kekId(PSEUDONYM, 't1', subject)), { kid: 'm1', key: randomBytes(32) });
    await h.store.put(wrapped.kid, wrapped);
    const reader = new Database(join(h.dir, 'keys.db'));
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM crypto_keys').get();
    const endRead = () => {
      reader.exec('COMMIT');
      reader.close();
    };
    return { h, wrapped, endRead };
  }

  it('retries the checkpoint itself while a short reader finishes, and says how many it took', async () => {
    const { h, wrapped, endRead } = await keyUnderReader('eve');
    // The first checkpoint runs inside the call, under the reader; the reader ends before the next.
    const destroying = h.store.tombstone(wrapped.kid);
    endRead();
    expect(await destroying).toEqual({ residue: 'none', checkpoints: 2 });
    expect((await filesIn(h.dir)).includes(wrapped.ct)).toBe(false);
  });

  it('does not report a destroy as done while a reader pins the WAL frames that hold the old key', async () => {
    const { h, wrapped, endRead } = await keyUnderReader('dee');
    await expect(h.store.tombstone(wrapped.kid)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    endRead();
    // The retry a caller makes (the deletion's key target) empties it.
    expect(await h.store.tombstone(wrapped.kid)).toEqual({ residue: 'none', checkpoints: 1 });
    const after = await filesIn(h.dir);
    expect(after.includes(wrapped.ct)).toBe(false);
    expect(await h.store.get(wrapped.kid)).toEqual({ status: 'destroyed' });
  }, 30_000);
});
