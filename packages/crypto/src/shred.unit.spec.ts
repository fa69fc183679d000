/**
 * shredRecords, the `key` deletion target: which keys a delete and a forget destroy, what stays
 * readable, and that a retry is harmless. Key stores are SQLite `:memory:`, one per test.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSqliteKeyStore } from './embedded/sqlite-key-store.ts';
import type { ContentAad, Envelope } from './envelope.ts';
import type { KeyStore } from './key-store.ts';
import { openKeyring, type Keyring } from './keyring.ts';
import { masterKeys } from './master-keys.ts';
import { keyringSnapshotSealer } from './sealing/snapshot-sealer.ts';
import { shredRecords } from './shred.ts';

const KEYS = masterKeys('m1', new Map([['m1', randomBytes(32)]]));
const TENANT = 't1';

async function open(store?: KeyStore): Promise<{ keyring: Keyring; store: KeyStore }> {
  const own = store ?? createSqliteKeyStore({ file: ':memory:' });
  if (store === undefined) onTestFinished(() => own.close());
  const keyring = await openKeyring({ masterKeys: KEYS, store: own });
  onTestFinished(() => keyring.close());
  return { keyring, store: own };
}

const rec = (subjectId: string, recordId: string): ContentAad => ({ tenantId: TENANT, subjectId, recordId, version: 1 });
const text = (aad: ContentAad) => `secret of ${aad.recordId}`;

/** Writes each record (under the given KEK generation) and returns a reader that says what each one reads as. */
async function writeAll(keyring: Keyring, records: Array<ContentAad & { kekGeneration?: number }>) {
  const sealed = new Map<string, { aad: ContentAad; envelope: Envelope }>();
  for (const r of records) sealed.set(r.recordId, { aad: r, envelope: await keyring.encrypt(text(r), r) });
  /** The content, or the CryptoError reason that stops it, as a service with an empty cache sees it. */
  return async (store: KeyStore, recordId: string): Promise<string> => {
    const entry = sealed.get(recordId);
    if (entry === undefined) throw new Error(`no record ${recordId}`);
    const { keyring: reader } = await open(store);
    return reader.decrypt(entry.envelope, entry.aad).catch((err: unknown) => (err as { reason?: string }).reason ?? String(err));
  };
}

const status = async (store: KeyStore, kid: string) => (await store.get(kid)).status;

describe('shredRecords', () => {
  it('delete: destroys only the listed data keys; a sibling of the same subject and its KEK stay', async () => {
    const { keyring, store } = await open();
    const read = await writeAll(keyring, [rec('alice', 'r1'), rec('alice', 'r2')]);
    const result = await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1'], subjectKeys: false });
    expect(result).toEqual({ dataKeys: 1, keks: 0, keksKept: 0, keyResidue: 'none', checkpoints: 1 });
    expect(await read(store, 'r1')).toBe('KEY_DESTROYED');
    expect(await read(store, 'r2')).toBe(text(rec('alice', 'r2')));
    expect(await status(store, keyring.subjectKekId(TENANT, 'alice'))).toBe('present');
    // The shredding keyring itself does not serve the destroyed key from its cache either.
    await expect(keyring.dataKey('dk:t1/r1/1')).rejects.toMatchObject({ reason: 'KEY_DESTROYED' });
  });

  it('forget: destroys the KEK once every data key under it is in the request; other subjects stay', async () => {
    const { keyring, store } = await open();
    const read = await writeAll(keyring, [rec('alice', 'r1'), rec('alice', 'r2'), rec('bob', 'b1')]);
    const result = await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1', 'r2'], subjectKeys: true });
    expect(result).toEqual({ dataKeys: 2, keks: 1, keksKept: 0, keyResidue: 'none', checkpoints: 3 });
    expect(await status(store, keyring.subjectKekId(TENANT, 'alice'))).toBe('destroyed');
    expect(await read(store, 'r1')).toBe('KEY_DESTROYED');
    expect(await read(store, 'r2')).toBe('KEY_DESTROYED');
    expect(await read(store, 'b1')).toBe(text(rec('bob', 'b1')));
    expect(await status(store, keyring.subjectKekId(TENANT, 'bob'))).toBe('present');
  });

  it('forget: write-admission\'s snapshot key of the generation keeps no KEK alive, and what it sealed opens no more', async () => {
    const { keyring, store } = await open();
    await writeAll(keyring, [rec('alice', 'r1')]);
    const sealer = keyringSnapshotSealer(keyring);
    const ref = { tenantId: TENANT, subjectId: 'alice', kekGeneration: 1 };
    const sealed = await sealer.seal(ref, '{"records":{"r1":"ab"},"slots":{}}');
    const result = await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1'], subjectKeys: true });
    expect(result).toMatchObject({ dataKeys: 1, keks: 1, keksKept: 0 });
    const { keyring: reader } = await open(store);
    expect(await keyringSnapshotSealer(reader).open(ref, sealed)).toBeUndefined();
  });

  it('a snapshot sealed under the plain-hash key id of before keyed ids still opens, and goes with the forget too', async () => {
    const { keyring, store } = await open();
    await writeAll(keyring, [rec('alice', 'r1')]);
    const ref = { tenantId: TENANT, subjectId: 'alice', kekGeneration: 1 };
    const legacyId = `~adm~${createHash('sha256').update(JSON.stringify(['gm.kek.v1', TENANT, 'alice', 1]), 'utf8').digest('base64url')}`;
    const legacy = await keyring.encrypt('{"records":{}}', { ...ref, recordId: legacyId, version: 0 }, 2);
    const sealer = keyringSnapshotSealer(keyring);
    expect(await sealer.open(ref, legacy)).toBe('{"records":{}}');
    // A new seal names the keyed id; a record's own envelope is refused as a snapshot.
    expect((await sealer.seal(ref, '{}')).kid).toBe(`dk:${TENANT}/${keyring.snapshotKeyRecordId(TENANT, 'alice', 1)}/1`);
    expect(keyring.snapshotKeyRecordId(TENANT, 'alice', 1)).not.toBe(legacyId);
    await expect(sealer.open(ref, await keyring.encrypt('x', { ...ref, recordId: 'r1', version: 1 }))).rejects.toMatchObject({ reason: 'AUTH_FAILED' });
    await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1'], subjectKeys: true });
    expect(await keyringSnapshotSealer((await open(store)).keyring).open(ref, legacy)).toBeUndefined();
  });

  it('forget: keeps a KEK that still wraps another record\'s data key (e.g. under legal hold), and that record stays readable', async () => {
    const { keyring, store } = await open();
    const read = await writeAll(keyring, [rec('alice', 'r1'), rec('alice', 'r2'), rec('alice', 'held')]);
    const result = await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1', 'r2'], subjectKeys: true });
    expect(result).toEqual({ dataKeys: 2, keks: 0, keksKept: 1, keyResidue: 'none', checkpoints: 2 });
    expect(await status(store, keyring.subjectKekId(TENANT, 'alice'))).toBe('present');
    expect(await read(store, 'held')).toBe(text(rec('alice', 'held')));
    expect(await read(store, 'r1')).toBe('KEY_DESTROYED');
    expect(await read(store, 'r2')).toBe('KEY_DESTROYED');
  });

  it('forget: destroys every KEK generation the records were written under', async () => {
    const { keyring, store } = await open();
    const read = await writeAll(keyring, [rec('alice', 'r1'), { ...rec('alice', 'r2'), kekGeneration: 2 }]);
    const result = await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1', 'r2'], subjectKeys: true });
    expect(result).toEqual({ dataKeys: 2, keks: 2, keksKept: 0, keyResidue: 'none', checkpoints: 4 });
    expect(await status(store, keyring.subjectKekId(TENANT, 'alice', 1))).toBe('destroyed');
    expect(await status(store, keyring.subjectKekId(TENANT, 'alice', 2))).toBe('destroyed');
    expect(await read(store, 'r2')).toBe('KEY_DESTROYED');
  });

  it('a second run (a retried task) reports the same data keys, destroys nothing more and does not throw', async () => {
    const { keyring, store } = await open();
    await writeAll(keyring, [rec('alice', 'r1'), rec('alice', 'r2')]);
    const request = { tenantId: TENANT, recordIds: ['r1', 'r2'], subjectKeys: true };
    expect(await shredRecords(keyring, store, request)).toEqual({ dataKeys: 2, keks: 1, keksKept: 0, keyResidue: 'none', checkpoints: 3 });
    expect(await shredRecords(keyring, store, request)).toEqual({ dataKeys: 2, keks: 0, keksKept: 0, keyResidue: 'none', checkpoints: 2 });
    expect(await shredRecords(keyring, store, { ...request, subjectKeys: false })).toEqual({ dataKeys: 2, keks: 0, keksKept: 0, keyResidue: 'none', checkpoints: 2 });
  });

  it('a record that never got a key (written before content encryption) is shredded too: no key can be made for it later', async () => {
    const { keyring, store } = await open();
    const result = await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['legacy'], subjectKeys: true });
    expect(result).toEqual({ dataKeys: 1, keks: 0, keksKept: 0, keyResidue: 'none', checkpoints: 1 });
    await expect(keyring.encrypt('late write', rec('alice', 'legacy'))).rejects.toMatchObject({ reason: 'KEY_DESTROYED' });
  });

  it('after a forget the subject writes again under KEK generation 2; generation 1 can never be recreated', async () => {
    const { keyring, store } = await open();
    await writeAll(keyring, [rec('alice', 'r1')]);
    await shredRecords(keyring, store, { tenantId: TENANT, recordIds: ['r1'], subjectKeys: true });
    const read = await writeAll(keyring, [{ ...rec('alice', 'r2'), kekGeneration: 2 }]);
    expect(await read(store, 'r2')).toBe(text(rec('alice', 'r2')));
    const wrapped = await store.get('dk:t1/r2/1');
    expect(wrapped.status === 'present' && wrapped.wrapped.wrappedBy).toBe(keyring.subjectKekId(TENANT, 'alice', 2));
    // A write still naming generation 1 (a stale writer) fails rather than re-creating the destroyed KEK.
    await expect(keyring.encrypt('stale', rec('alice', 'r3'))).rejects.toMatchObject({ reason: 'KEY_DESTROYED' });
    expect(await status(store, keyring.subjectKekId(TENANT, 'alice', 1))).toBe('destroyed');
  });
});
