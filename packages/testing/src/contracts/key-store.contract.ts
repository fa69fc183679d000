import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import type { Bus } from '@gm/bus';
import { KEYS_TOPIC, PSEUDONYM_KEY_ID, dataKeyId, generateKey, kekId, wrapKey, type KeyStore, type WrappedKey } from '@gm/crypto';

/** What an adapter under test hands the suite; every test gets its own empty storage. */
export interface KeyStoreHarness {
  store: KeyStore;
  /** Another instance over the same storage (another service, or a restart). */
  open: () => Promise<KeyStore>;
  /** Every byte the adapter has persisted (database file, log records), for leak searches. */
  persistedBytes: () => Promise<Buffer>;
  /** Closes every instance handed out and deletes what the harness made. */
  cleanup: () => Promise<void>;
}

/** What the `memory.keys` log holds, keys and values as stored: persistedBytes of a topic-backed store. */
export async function keysLogBytes(bus: Bus): Promise<Buffer> {
  const parts: string[] = [];
  for await (const message of bus.readAll(KEYS_TOPIC)) parts.push(message.key, JSON.stringify(message.value));
  return Buffer.from(parts.join('\n'), 'utf8');
}

export type KeyStoreFactory = () => Promise<KeyStoreHarness>;

const MASTER = { kid: 'm1', key: randomBytes(32) };
const PSEUDONYM = { kid: PSEUDONYM_KEY_ID, key: randomBytes(32) };

function sampleKek(tenant = 't1', subject = `user-${randomBytes(4).toString('hex')}@example.com`): { wrapped: WrappedKey; raw: Buffer; subject: string } {
  const kek = generateKey(kekId(PSEUDONYM, tenant, subject));
  return { wrapped: wrapKey('kek', kek, MASTER), raw: kek.key, subject };
}

function sampleDataKey(kek: WrappedKey, record = `rec-${randomBytes(4).toString('hex')}`): WrappedKey {
  // The KEK's bytes do not matter to the store; only the shape and ids do.
  return wrapKey('dk', generateKey(dataKeyId('t1', record)), { kid: kek.kid, key: randomBytes(32) });
}

/** Runs the key-store semantics (port: packages/crypto/src/key-store.ts) against one adapter. */
export function testKeyStore(adapterName: string, factory: KeyStoreFactory): void {
  describe(`KeyStore contract: ${adapterName}`, () => {
    async function open(): Promise<KeyStoreHarness> {
      const harness = await factory();
      onTestFinished(() => harness.cleanup());
      return harness;
    }

    it('get answers missing for an unknown id, present with what put stored, and put replaces (re-wrap)', async () => {
      const { store } = await open();
      const { wrapped } = sampleKek();
      expect(await store.get(wrapped.kid)).toEqual({ status: 'missing' });
      await store.put(wrapped.kid, wrapped);
      expect(await store.get(wrapped.kid)).toEqual({ status: 'present', wrapped });
      const rewrapped = { ...wrapped, wrappedBy: 'm2' };
      await store.put(wrapped.kid, rewrapped);
      expect(await store.get(wrapped.kid)).toEqual({ status: 'present', wrapped: rewrapped });
    });

    it('a tombstoned key answers destroyed for good: never the old value, and a later put is refused', async () => {
      const { store } = await open();
      const { wrapped } = sampleKek();
      const sibling = sampleKek();
      await store.put(wrapped.kid, wrapped);
      await store.put(sibling.wrapped.kid, sibling.wrapped);
      await store.tombstone(wrapped.kid);
      expect(await store.get(wrapped.kid)).toEqual({ status: 'destroyed' });
      await expect(store.put(wrapped.kid, wrapped)).rejects.toMatchObject({ code: 'MEM_CONFLICT' });
      expect(await store.get(wrapped.kid)).toEqual({ status: 'destroyed' });
      await store.tombstone(wrapped.kid);
      expect(await store.get(wrapped.kid)).toEqual({ status: 'destroyed' });
      expect(await store.get(sibling.wrapped.kid)).toEqual({ status: 'present', wrapped: sibling.wrapped });
    });

    it('a tombstone of an id never written is final too (forget before the first write)', async () => {
      const { store } = await open();
      const { wrapped } = sampleKek();
      await store.tombstone(wrapped.kid);
      expect(await store.get(wrapped.kid)).toEqual({ status: 'destroyed' });
      await expect(store.put(wrapped.kid, wrapped)).rejects.toMatchObject({ code: 'MEM_CONFLICT' });
    });

    it('all lists the present keys, KEKs and data keys, and leaves destroyed ones out', async () => {
      const { store } = await open();
      const a = sampleKek();
      const b = sampleKek();
      const dk = sampleDataKey(a.wrapped);
      for (const w of [a.wrapped, b.wrapped, dk]) await store.put(w.kid, w);
      await store.tombstone(b.wrapped.kid);
      const all = await store.all();
      expect(all.map((w) => w.kid).sort()).toEqual([a.wrapped.kid, dk.kid].sort());
      expect(all.find((w) => w.kid === dk.kid)).toEqual(dk);
    });

    it('refuses a value that is not a wrapped key, or whose kid is another id, and stores nothing', async () => {
      const { store } = await open();
      const { wrapped } = sampleKek();
      await expect(store.put('kek:other', wrapped)).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      await expect(store.put(wrapped.kid, { ...wrapped, ct: 'not base64url!' })).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      expect(await store.get('kek:other')).toEqual({ status: 'missing' });
      expect(await store.get(wrapped.kid)).toEqual({ status: 'missing' });
    });

    it('tells its listeners which key was destroyed', async () => {
      const { store } = await open();
      const { wrapped } = sampleKek();
      await store.put(wrapped.kid, wrapped);
      const seen: string[] = [];
      const stop = store.onDestroyed((kid) => seen.push(kid));
      await store.tombstone(wrapped.kid);
      expect(seen).toEqual([wrapped.kid]);
      stop();
      const other = sampleKek();
      await store.tombstone(other.wrapped.kid);
      expect(seen).toEqual([wrapped.kid]);
    });

    it('another instance over the same storage sees puts and tombstones (restart, second service)', async () => {
      const h = await open();
      const { wrapped } = sampleKek();
      const forgotten = sampleKek();
      await h.store.put(wrapped.kid, wrapped);
      await h.store.put(forgotten.wrapped.kid, forgotten.wrapped);
      const second = await h.open();
      expect(await second.get(wrapped.kid)).toEqual({ status: 'present', wrapped });
      await h.store.tombstone(forgotten.wrapped.kid);
      // The second instance learns of the tombstone without being told by the first.
      await vi.waitFor(async () => expect(await second.get(forgotten.wrapped.kid)).toEqual({ status: 'destroyed' }), {
        timeout: 10_000,
        interval: 50,
      });
      await expect(second.put(forgotten.wrapped.kid, forgotten.wrapped)).rejects.toMatchObject({ code: 'MEM_CONFLICT' });
      await h.store.close();
      const restarted = await h.open();
      expect(await restarted.get(forgotten.wrapped.kid)).toEqual({ status: 'destroyed' });
      expect(await restarted.get(wrapped.kid)).toEqual({ status: 'present', wrapped });
    });

    it('persists no unwrapped key material and no subject id', async () => {
      const h = await open();
      const keks = [sampleKek(), sampleKek()];
      for (const k of keks) await h.store.put(k.wrapped.kid, k.wrapped);
      await h.store.tombstone(keks[1]?.wrapped.kid ?? '');
      const bytes = await h.persistedBytes();
      expect(bytes.length).toBeGreaterThan(0);
      for (const k of keks) {
        expect(bytes.includes(k.raw)).toBe(false);
        for (const encoding of ['base64', 'base64url', 'hex'] as const) expect(bytes.includes(k.raw.toString(encoding))).toBe(false);
        expect(bytes.includes(k.subject)).toBe(false);
      }
    });
  });
}
