import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSqliteKeyStore } from './embedded/sqlite-key-store.ts';
import type { ContentAad, Envelope } from './envelope.ts';
import type { KeyStore } from './key-store.ts';
import { openKeyring, type Keyring } from './keyring.ts';
import { unwrapKey } from './keys.ts';
import { masterKeys, type MasterKeys } from './master-keys.ts';

const M1 = randomBytes(32);
const M2 = randomBytes(32);
const only = (id: string, key: Buffer): MasterKeys => masterKeys(id, new Map([[id, key]]));

async function storeDir(): Promise<{ dir: string; open: () => KeyStore; bytes: () => Promise<Buffer> }> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-keyring-'));
  const stores: KeyStore[] = [];
  onTestFinished(async () => {
    for (const store of stores) await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    dir,
    open: () => {
      const store = createSqliteKeyStore({ file: join(dir, 'keys.db') });
      stores.push(store);
      return store;
    },
    bytes: async () => Buffer.concat(await Promise.all((await readdir(dir)).map((name) => readFile(join(dir, name))))),
  };
}

async function ring(store: KeyStore, keys: MasterKeys = only('m1', M1), clock?: () => number): Promise<Keyring> {
  const keyring = await openKeyring({ masterKeys: keys, store, ...(clock ? { clock } : {}), ttlMs: 1_000 });
  onTestFinished(() => keyring.close());
  return keyring;
}

const rec = (subjectId: string, recordId: string, version = 1): ContentAad => ({ tenantId: 't1', subjectId, recordId, version });
const text = (aad: ContentAad) => `note ${aad.recordId} about ${aad.subjectId}: secret-${aad.recordId}`;

async function writeAll(keyring: Keyring, aads: ContentAad[]): Promise<Map<ContentAad, Envelope>> {
  const out = new Map<ContentAad, Envelope>();
  for (const aad of aads) out.set(aad, await keyring.encrypt(text(aad), aad));
  return out;
}

const destroyed = expect.objectContaining({ reason: 'KEY_DESTROYED', code: 'MEM_NOT_FOUND' });

describe('keyring', () => {
  it('round-trips content; one KEK per subject, one data key per record, all in the store', async () => {
    const { open } = await storeDir();
    const store = open();
    const keyring = await ring(store);
    const aads = [rec('alice', 'r1'), rec('alice', 'r2'), rec('bob', 'r3')];
    const envelopes = await writeAll(keyring, aads);
    for (const [aad, env] of envelopes) expect(await keyring.decrypt(env, aad)).toBe(text(aad));
    const all = await store.all();
    expect(all.filter((w) => w.kind === 'kek').map((w) => w.kid).sort()).toEqual([keyring.subjectKekId('t1', 'alice'), keyring.subjectKekId('t1', 'bob')].sort());
    expect(all.filter((w) => w.kind === 'dk').map((w) => w.kid).sort()).toEqual(['dk:t1/r1/1', 'dk:t1/r2/1', 'dk:t1/r3/1']);
    // A fresh keyring (another service, empty cache) reads the same content.
    const other = await ring(open());
    for (const [aad, env] of envelopes) expect(await other.decrypt(env, aad)).toBe(text(aad));
  });

  it('forgetting a subject makes every record under its KEK undecryptable, for good; other subjects stay readable', async () => {
    const { open } = await storeDir();
    const store = open();
    const keyring = await ring(store);
    const alice = [rec('alice', 'r1'), rec('alice', 'r2', 3)];
    const bob = rec('bob', 'r3');
    const envelopes = await writeAll(keyring, [...alice, bob]);
    await keyring.forgetSubject('t1', 'alice');
    // The KEK and every data key it wrapped left the cache; bob's stayed.
    expect(keyring.cachedKeyIds().sort()).toEqual(['dk:t1/r3/1', keyring.subjectKekId('t1', 'bob')].sort());
    for (const aad of alice) await expect(keyring.decrypt(envelopes.get(aad) as Envelope, aad)).rejects.toEqual(destroyed);
    expect(await keyring.decrypt(envelopes.get(bob) as Envelope, bob)).toBe(text(bob));
    // Not by a fresh service either, and no new KEK can be made for the forgotten subject.
    const fresh = await ring(open());
    for (const aad of alice) await expect(fresh.decrypt(envelopes.get(aad) as Envelope, aad)).rejects.toEqual(destroyed);
    await expect(fresh.encrypt('new', rec('alice', 'r9'))).rejects.toEqual(destroyed);
    expect(await store.get(keyring.subjectKekId('t1', 'alice'))).toEqual({ status: 'destroyed' });
  });

  it('destroying a data key erases only that record; its siblings under the same KEK stay readable', async () => {
    const { open } = await storeDir();
    const keyring = await ring(open());
    const [r1, r2] = [rec('alice', 'r1'), rec('alice', 'r2')];
    const envelopes = await writeAll(keyring, [r1, r2]);
    await keyring.destroyDataKey('t1', 'r1');
    await expect(keyring.decrypt(envelopes.get(r1) as Envelope, r1)).rejects.toEqual(destroyed);
    await expect(keyring.encrypt('again', r1)).rejects.toEqual(destroyed);
    expect(await keyring.decrypt(envelopes.get(r2) as Envelope, r2)).toBe(text(r2));
    expect(await (await ring(open())).decrypt(envelopes.get(r2) as Envelope, r2)).toBe(text(r2));
  });

  it('a keyring on the same store drops keys on a tombstone at once; one on another store within its TTL', async () => {
    const { open } = await storeDir();
    let now = Date.UTC(2030, 0, 1);
    const clock = () => now;
    const shared = open();
    const writer = await ring(shared, undefined, clock);
    const aad = rec('alice', 'r1');
    const env = await writer.encrypt(text(aad), aad);
    const sameStore = await ring(shared, undefined, clock);
    const otherProcess = await ring(open(), undefined, clock);
    expect(await sameStore.decrypt(env, aad)).toBe(text(aad));
    expect(await otherProcess.decrypt(env, aad)).toBe(text(aad));

    await writer.forgetSubject('t1', 'alice');
    await expect(sameStore.decrypt(env, aad)).rejects.toEqual(destroyed);
    // Not told of the tombstone: its cached key lasts until the TTL, and not a millisecond more.
    now += 999;
    expect(await otherProcess.decrypt(env, aad)).toBe(text(aad));
    now += 1;
    await expect(otherProcess.decrypt(env, aad)).rejects.toEqual(destroyed);
  });

  it('a wrong master key fails open with an error naming it, and creates nothing', async () => {
    const { open } = await storeDir();
    const store = open();
    await writeAll(await ring(store), [rec('alice', 'r1')]);
    const before = await store.all();
    await expect(openKeyring({ masterKeys: only('m1', randomBytes(32)), store })).rejects.toEqual(
      expect.objectContaining({ reason: 'MASTER_KEY_MISMATCH', message: expect.stringContaining('master key "m1" cannot unwrap') }),
    );
    await expect(openKeyring({ masterKeys: only('m2', M2), store })).rejects.toEqual(
      expect.objectContaining({ reason: 'MASTER_KEY_MISMATCH', message: expect.stringContaining('master key "m1", which is not configured') }),
    );
    expect(await store.all()).toEqual(before);
    // An empty store opens with any key.
    const empty = (await storeDir()).open();
    await expect(openKeyring({ masterKeys: only('m2', M2), store: empty })).resolves.toBeDefined();
  });

  it('rotates the master key without losing anything; the old key can go only once nothing needs it', async () => {
    const { open } = await storeDir();
    const store = open();
    const keyring = await ring(store);
    const aads = [rec('alice', 'r1'), rec('bob', 'r2'), rec('carol', 'r3'), rec('dave', 'r4')];
    const envelopes = await writeAll(keyring, aads);
    await keyring.forgetSubject('t1', 'dave');

    // Before the rotation, dropping the old key is refused at open.
    await expect(openKeyring({ masterKeys: only('m2', M2), store: open() })).rejects.toEqual(expect.objectContaining({ reason: 'MASTER_KEY_MISMATCH' }));
    await expect(keyring.rotateMasterKey({ id: 'm1', key: M2 })).rejects.toEqual(expect.objectContaining({ reason: 'MASTER_KEY_CONFIG' }));

    // The three live KEKs and the pseudonym key.
    expect(await keyring.rotateMasterKey({ id: 'm2', key: M2 })).toEqual({ rewrapped: 4, destroyedMeanwhile: 0 });
    expect(keyring.activeMasterKeyId).toBe('m2');
    const keks = (await store.all()).filter((w) => w.kind === 'kek');
    expect(keks.map((w) => w.wrappedBy)).toEqual(['m2', 'm2', 'm2']);
    for (const kek of keks) expect(() => unwrapKey(kek, { kid: 'm2', key: M2 })).not.toThrow();
    expect(await keyring.rotateMasterKey({ id: 'm2', key: M2 })).toEqual({ rewrapped: 0, destroyedMeanwhile: 0 });

    // The rotating keyring, one with both keys, and one with only the new key read everything.
    const both = await ring(open(), masterKeys('m2', new Map([['m1', M1], ['m2', M2]])));
    const newOnly = await ring(open(), only('m2', M2));
    for (const reader of [keyring, both, newOnly]) {
      for (const aad of aads.slice(0, 3)) expect(await reader.decrypt(envelopes.get(aad) as Envelope, aad)).toBe(text(aad));
      const dave = aads[3] as ContentAad;
      await expect(reader.decrypt(envelopes.get(dave) as Envelope, dave)).rejects.toEqual(destroyed);
    }
    // New subjects after the rotation get KEKs under the new key, with ids under the same pseudonym
    // key though it was derived from m1 (the KEK ids the old keyring derives name them); the old key
    // alone cannot open the store.
    await newOnly.encrypt('after', rec('erin', 'r5'));
    expect(newOnly.subjectKekId('t1', 'alice')).toBe(keyring.subjectKekId('t1', 'alice'));
    expect((await store.get(keyring.subjectKekId('t1', 'erin'))).status === 'present' && (await store.all()).every((w) => w.kind !== 'kek' || w.wrappedBy === 'm2')).toBe(true);
    await expect(openKeyring({ masterKeys: only('m1', M1), store: open() })).rejects.toEqual(
      expect.objectContaining({ reason: 'MASTER_KEY_MISMATCH', message: expect.stringContaining('"m2"') }),
    );
  });

  it('the pseudonym key is made once: instances opening a new store at once derive the same key, and a reopen reads it back', async () => {
    const { open } = await storeDir();
    const store = open();
    const racing = await Promise.all([ring(store), ring(open()), ring(open())]);
    const ids = racing.map((k) => k.subjectKekId('t1', 'alice'));
    expect(new Set(ids).size).toBe(1);
    expect((await store.all()).filter((w) => w.kind === 'pk').map((w) => w.kid)).toEqual(['pk:subjects:v1']);
    expect((await ring(open())).subjectKekId('t1', 'alice')).toBe(ids[0]);
    // Another deployment (another master key) has another pseudonym key, so other ids for the same subject.
    expect((await ring((await storeDir()).open(), only('m1', M2))).subjectKekId('t1', 'alice')).not.toBe(ids[0]);
  });

  it('persists no plaintext, no subject id and no unwrapped key (search the bytes)', async () => {
    const { open, bytes } = await storeDir();
    const store = open();
    const keyring = await ring(store);
    const aads = [rec('alice@example.com', 'r1'), rec('alice@example.com', 'r2')];
    const envelopes = await writeAll(keyring, aads);
    const dataKeys = await Promise.all(aads.map((aad) => keyring.dataKeyFor(aad)));
    const keks = (await store.all()).filter((w) => w.kind === 'kek').map((w) => unwrapKey(w, { kid: 'm1', key: M1 }));
    const persisted = Buffer.concat([await bytes(), Buffer.from(JSON.stringify([...envelopes.values()]), 'utf8')]);
    const pseudonymKey = (await store.all()).filter((w) => w.kind === 'pk').map((w) => unwrapKey(w, { kid: 'm1', key: M1 }));
    const secrets = [M1, ...dataKeys.map((k) => k.key), ...keks.map((k) => k.key), ...pseudonymKey.map((k) => k.key)];
    for (const secret of secrets) {
      expect(persisted.includes(secret)).toBe(false);
      for (const encoding of ['base64', 'base64url', 'hex'] as const) expect(persisted.includes(secret.toString(encoding))).toBe(false);
    }
    for (const aad of aads) expect(persisted.includes(`secret-${aad.recordId}`)).toBe(false);
    expect(persisted.includes('alice')).toBe(false);
    // Nor a plain hash of it, in the forms an id or a digest would take (keys.ts: KEK ids are keyed).
    for (const digest of plainDigests('alice@example.com')) expect(persisted.includes(digest)).toBe(false);
  });
});

/** Unkeyed SHA-256 digests a key id could carry of `subject`: alone and in the old KEK-id encoding. */
function plainDigests(subject: string): string[] {
  const parts = [subject, JSON.stringify(['gm.kek.v1', 't1', subject, 1])];
  return parts.flatMap((p) => (['hex', 'base64url', 'base64'] as const).map((e) => createHash('sha256').update(p, 'utf8').digest(e)));
}
