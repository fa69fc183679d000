import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { ERASED_CONTENT_HASH, MemoryCommand, type MemoryEvent } from '@gm/contracts';
import { createSqliteKeyStore, keyringSnapshotSealer, masterKeys, openKeyring, type Keyring } from '@gm/crypto';
import { DEFAULT_TTL_POLICY, decide, evolve, initialState, type SubjectState } from '@gm/domain';
import { StateStore, type KeyValueStore } from '@gm/state-store';
import { TEST_WRITER, openEmbeddedFixture, writeMemoryCommand, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { CommittedStates } from './committed-states.ts';

/** A subject state with `records` active records, all at `version`. */
function stateWith(records: number, version = 1): SubjectState {
  const state = initialState();
  for (let i = 0; i < records; i += 1) {
    const id = `rec-${i}`;
    state.records[id] = { meta: { id, version, status: 'active' } as SubjectState['records'][string]['meta'] };
  }
  return state;
}

/** A keyring on an in-memory key store, closed with the test. */
async function testKeyring(): Promise<Keyring> {
  const store = createSqliteKeyStore({ file: ':memory:' });
  const keyring = await openKeyring({ masterKeys: masterKeys('A', new Map([['A', randomBytes(32)]])), store });
  onTestFinished(async () => {
    keyring.close();
    await store.close();
  });
  return keyring;
}

describe('write-admission committed states over the snapshot store', () => {
  let fx: EmbeddedFixture;
  beforeEach(async () => {
    fx = await openEmbeddedFixture({ partitions: 2 });
  });
  afterEach(async () => {
    await fx.close();
  });
  const open = (maxEntries = 1_000, kv: KeyValueStore = fx.kv) => new CommittedStates({ store: new StateStore(kv, 'gm:').admission, maxEntries });

  it('a fresh instance starts at the stored checkpoint and loads what was stored, as it was', async () => {
    const first = open();
    await first.startPoint(0);
    first.set('acme/cust-1', 0, stateWith(3));
    first.advance(0, 7);
    await first.flush();

    const next = open();
    expect(await next.startPoint(0)).toBe(7);
    expect(await next.startPoint(1)).toBe(0);
    expect(await next.load('acme/cust-1', 0)).toEqual(stateWith(3));
    expect(await next.load('acme/never-written', 0)).toEqual(initialState());
  });

  it('refuses a checkpoint past the end of its partition: the store belongs to another log', async () => {
    await new StateStore(fx.kv, 'gm:').admission.saveCheckpoint(0, 9);
    await expect(open().startPoint(0, async () => 4)).rejects.toThrow(/partition 0 \(9\) is past the partition's end \(4\)/);
    expect(await open().startPoint(0, async () => 9)).toBe(9);
  });

  it('an instance that lost the partition and stores late never overwrites the newer owner\'s state or checkpoint', async () => {
    const stale = open();
    const owner = open();
    await stale.startPoint(0);
    stale.set('acme/cust-1', 0, stateWith(1, 1));
    stale.advance(0, 4);

    await owner.startPoint(0);
    owner.set('acme/cust-1', 0, stateWith(1, 2));
    owner.advance(0, 9);
    await owner.flush();
    await stale.flush();

    const fresh = open();
    expect(await fresh.startPoint(0)).toBe(9);
    expect(await fresh.load('acme/cust-1', 0)).toEqual(stateWith(1, 2));
  });

  it('taking a partition back after a newer owner stored it drops what this instance held of it and folds from the newer checkpoint', async () => {
    const returning = open();
    await returning.startPoint(0);
    returning.set('acme/cust-1', 0, stateWith(1, 1));
    returning.set('acme/cust-2', 1, stateWith(2, 1));
    returning.advance(0, 3);
    returning.advance(1, 5);

    const owner = open();
    await owner.startPoint(0);
    owner.set('acme/cust-1', 0, stateWith(1, 5));
    owner.advance(0, 12);
    await owner.flush();

    expect(await returning.startPoint(0)).toBe(12);
    expect(await returning.load('acme/cust-1', 0)).toEqual(stateWith(1, 5));
    // The other partition is untouched: still held, still this instance's.
    expect(await returning.startPoint(1)).toBe(5);
    expect(returning.get('acme/cust-2')).toEqual(stateWith(2, 1));
  });

  it('stays within its memory bound after a flush, and a dropped subject loads back unchanged', async () => {
    const states = open(100);
    await states.startPoint(0);
    for (let s = 0; s < 20; s += 1) states.set(`acme/cust-${s}`, 0, stateWith(10 + s));
    states.advance(0, 20);
    await states.flush();
    expect(states.size).toBeLessThanOrEqual(100);
    // The least recently used went first.
    expect(states.get('acme/cust-0')).toBeUndefined();
    expect(states.get('acme/cust-19')).toEqual(stateWith(29));
    expect(await states.load('acme/cust-0', 0)).toEqual(stateWith(10));
  });

  it('keeps a changed state in memory while the store is down, and stores it once the store is back', async () => {
    let down = false;
    const flaky = new Proxy(fx.kv, {
      get: (target, prop, receiver) => {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => (down ? Promise.reject(new Error('store unavailable')) : (value as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
    const states = open(1, flaky);
    await states.startPoint(0);
    states.set('acme/cust-1', 0, stateWith(5));
    states.advance(0, 6);
    down = true;
    await expect(states.flush()).rejects.toThrow('store unavailable');
    expect(states.get('acme/cust-1')).toEqual(stateWith(5));
    down = false;
    await states.flush();
    // Stored now, so the bound applies; and a fresh instance finds it.
    expect(states.get('acme/cust-1')).toBeUndefined();
    const fresh = open();
    expect(await fresh.startPoint(0)).toBe(6);
    expect(await fresh.load('acme/cust-1', 0)).toEqual(stateWith(5));
  });

  it('defers what a restart reads past the checkpoint: a subject folds its own events when loaded, and the checkpoint never passes one still deferred', async () => {
    const writes = (subject: string, from: number, count: number): MemoryEvent[] =>
      Array.from({ length: count }, (_, i) => decide(
        writeMemoryCommand({ commandId: `cmd-${subject}-${from + i}`, tenantId: 'acme', subjectId: subject, now: fx.clock.iso() }, { id: `rec-${from + i}`, content: `note ${from + i}` }),
        initialState(), { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
      ).events).flat();
    const before = writes('cust-d', 0, 2);
    const first = open();
    await first.startPoint(0);
    first.set('acme/cust-d', 0, before.reduce(evolve, initialState()));
    first.advance(0, 2);
    await first.flush();

    const restarted = open();
    expect(await restarted.startPoint(0)).toBe(2);
    const tail = writes('cust-d', 2, 3);
    tail.forEach((event, i) => restarted.defer('acme/cust-d', 0, event, 2 + i));
    restarted.advance(0, 5);
    expect(restarted.get('acme/cust-d')).toBeUndefined();
    expect(restarted.deferredCount).toBe(3);
    const loaded = await restarted.load('acme/cust-d', 0);
    expect(Object.keys(loaded.records).sort()).toEqual(['rec-0', 'rec-1', 'rec-2', 'rec-3', 'rec-4']);
    expect(restarted.deferredCount).toBe(0);

    // Other subjects' events stay deferred until loaded: a flush loads a bounded number of
    // them, and until all are stored the checkpoint stays below the oldest still deferred.
    const subjects = Array.from({ length: 600 }, (_, i) => `cust-e${i}`);
    subjects.forEach((subject, i) => writes(subject, 0, 1).forEach((event) => restarted.defer(`acme/${subject}`, 0, event, 5 + i)));
    restarted.advance(0, 5 + subjects.length);
    await restarted.flush();
    const partly = await open().startPoint(0);
    expect(partly).toBeGreaterThan(5);
    expect(partly).toBeLessThan(5 + subjects.length);
    expect(restarted.deferredCount).toBe(5 + subjects.length - partly);
    await restarted.flush({ all: true });
    expect(restarted.deferredCount).toBe(0);
    expect(await open().startPoint(0)).toBe(5 + subjects.length);
    const fresh = open();
    for (const subject of [subjects[0], subjects.at(-1)]) {
      expect(Object.keys((await fresh.load(`acme/${subject}`, 0)).records)).toEqual(['rec-0']);
    }
    expect(Object.keys((await fresh.load('acme/cust-d', 0)).records)).toHaveLength(5);
  });

  it('never folds again what a state stored past the checkpoint already has', async () => {
    const store = new StateStore(fx.kv, 'gm:').admission;
    // A forget as logs before keyGeneration was recorded carry it: folding it twice would skip a generation.
    const [forget] = decide(MemoryCommand.parse({
      type: 'ForgetSubject', data: { jobId: 'job-1', within: { kind: 'tenant' } },
      metadata: { commandId: 'cmd-f', tenantId: 'acme', subjectId: 'cust-f', now: fx.clock.iso(), actor: TEST_WRITER, policyRevision: 1 },
    }), initialState(), { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 }).events;
    if (forget?.type !== 'SubjectForgotten') throw new Error('no SubjectForgotten event');
    const { keyGeneration: _recorded, ...legacy } = forget.data;
    const event: MemoryEvent = { ...forget, data: legacy };
    const folded = evolve(initialState(), event);
    expect(folded.keyGeneration).toBe(2);
    // Stored through offset 8 (the forget is at 7), while the checkpoint stayed at 5.
    await store.saveStates(8, [{ key: 'acme/cust-f', state: folded }]);
    await store.saveCheckpoint(0, 5);

    const restarted = open();
    expect(await restarted.startPoint(0)).toBe(5);
    restarted.defer('acme/cust-f', 0, event, 7);
    restarted.advance(0, 8);
    expect((await restarted.load('acme/cust-f', 0)).keyGeneration).toBe(2);
  });

  it('stores no plain content hash or request fingerprint: they are sealed under the subject\'s key, open again on load, and go with a forget', async () => {
    const keyring = await testKeyring();
    const sealer = keyringSnapshotSealer(keyring);
    const sealing = () => new CommittedStates({ store: new StateStore(fx.kv, 'gm:').admission, maxEntries: 1_000, sealer });
    const hash = createHash('sha256').update('Customer 1 is treated for a rare condition', 'utf8').digest('hex');
    const fingerprint = 'cd'.repeat(32);
    const state = stateWith(0);
    state.records['mem-1'] = { meta: { id: 'mem-1', version: 1, status: 'active', contentHash: hash } as SubjectState['records'][string]['meta'] };
    state.idempotency['slot-1'] = { result: { id: 'mem-1', version: 1, status: 'active' }, at: '2026-11-30T08:00:00.000Z', requestHash: fingerprint };
    const states = sealing();
    await states.startPoint(0);
    states.set('acme/cust-1', 0, state);
    states.advance(0, 4);
    await states.flush();

    const stored = (await fx.kv.mget(await fx.kv.keys('gm:adm:'))).join('\n');
    expect(stored).toContain('mem-1');
    for (const secret of [hash, fingerprint, Buffer.from(hash, 'hex').toString('base64')]) expect(stored).not.toContain(secret);
    // Another instance holding the keys decides on the very state.
    expect(await sealing().load('acme/cust-1', 0)).toEqual(state);
    // The subject forgotten (its key destroyed): what is stored reads as erased, for whoever loads it.
    await keyring.forgetSubject('acme', 'cust-1', 1);
    const after = await sealing().load('acme/cust-1', 0);
    expect(after.records['mem-1']?.meta.contentHash).toBe(ERASED_CONTENT_HASH);
    expect(after.idempotency['slot-1']).toEqual({ result: { id: 'mem-1', version: 1, status: 'active' }, at: '2026-11-30T08:00:00.000Z' });
    // Stored under a keyed pseudonym of the subject: no key of the store names it.
    expect((await fx.kv.keys('gm:adm:')).filter((k) => k.includes('cust-1'))).toEqual([]);
  });

  it('loads a state stored under the plain subject key (before keyed state keys) and moves it at its next store', async () => {
    const keyring = await testKeyring();
    const sealing = () => new CommittedStates({ store: new StateStore(fx.kv, 'gm:').admission, maxEntries: 1_000, sealer: keyringSnapshotSealer(keyring) });
    // As an older write-admission stored it: under `tenant/subject`.
    const legacy = open();
    await legacy.startPoint(0);
    const state = stateWith(0);
    state.records['mem-1'] = { meta: { id: 'mem-1', version: 1, status: 'active', contentHash: 'ab'.repeat(32) } as SubjectState['records'][string]['meta'] };
    legacy.set('acme/cust-1', 0, state);
    legacy.advance(0, 4);
    await legacy.flush();
    expect(await fx.kv.keys('gm:adm:acme/cust-1')).toEqual(['gm:adm:acme/cust-1']);

    const states = sealing();
    await states.startPoint(0);
    expect(await states.load('acme/cust-1', 0)).toEqual(state);
    states.set('acme/cust-1', 0, state);
    states.advance(0, 5);
    await states.flush();
    expect((await fx.kv.keys('gm:adm:')).filter((k) => k.includes('cust-1'))).toEqual([]);
    expect(await sealing().load('acme/cust-1', 0)).toEqual(state);
  });

  it('stores no quarantined content: only where it lies in the log', async () => {
    const states = open();
    await states.startPoint(0);
    const state = stateWith(0);
    state.records['mem-q'] = {
      meta: { id: 'mem-q', version: 1, status: 'quarantined' } as SubjectState['records'][string]['meta'],
      pendingContent: 'Customer 1 door code is 4417', pendingAt: 3,
    };
    states.set('acme/cust-1', 0, state);
    states.advance(0, 4);
    await states.flush();
    const stored = await fx.kv.mget(await fx.kv.keys('gm:adm:'));
    expect(stored.join('\n')).not.toContain('door code');
    const loaded = await open().load('acme/cust-1', 0);
    expect(loaded.records['mem-q']).toEqual({ meta: state.records['mem-q']?.meta, pendingAt: 3 });
  });
});
