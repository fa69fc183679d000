/**
 * The `key` target waits for write-admission's rewrite of the subject's snapshot before it makes
 * the stores' files forget deleted bytes (§8.4): the state stored before the purge held the
 * records' hashes and provenance, and a rewrite that landed after the checkpoint would stay in
 * the write-ahead log, the old page in the file. Then it asks each copy to erase, waiting (by
 * the bus's retries) while one still holds deleted bytes, but not past the job's deadline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { subjectKey, type CopyErasureState } from '@gm/contracts';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { DEADLINE_MARGIN_MS, awaitSnapshotPurged, eraseCopies, erasureWaitUntil, type ErasableCopy } from './shredder.ts';

function openState(): StateStore {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-shredder-'));
  const state = new StateStore(createSqliteKeyValueStore({ file: path.join(dir, 'state.db') }), 'gm:');
  onTestFinished(async () => {
    await state.kv.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return state;
}

/** Where write-admission keeps the state now (a keyed pseudonym), and where it kept it before. */
const AT = { key: 'acme/~pseudonym-of-cust-1', legacyKey: subjectKey('acme', 'cust-1') };
const KEY = AT.key;
const stateWith = (statuses: Record<string, string>) => ({
  records: Object.fromEntries(Object.entries(statuses).map(([id, status]) => [id, { meta: { id, status } }])),
  idempotency: {},
});

describe('the key target and write-admission\'s snapshot', () => {
  it('does not go on while the stored state holds a job record unpurged, or does not hold it yet (a flush may be on its way)', async () => {
    const state = openState();
    // Nothing stored: the first flush of the subject may still be about to land.
    await expect(awaitSnapshotPurged(state, AT, ['m-1'], 0)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    await state.admission.saveStates(5, [{ key: KEY, state: stateWith({ 'm-1': 'tombstoned', 'm-2': 'purged' }) }]);
    await expect(awaitSnapshotPurged(state, AT, ['m-1', 'm-2'], 0)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE' });
    // Records of other subjects' states, or of this subject outside the job, are not waited for.
    await expect(awaitSnapshotPurged(state, AT, ['m-2'], 0)).resolves.toBeUndefined();
  });

  it('goes on once write-admission stored the purged state', async () => {
    const state = openState();
    await state.admission.saveStates(5, [{ key: KEY, state: stateWith({ 'm-1': 'tombstoned' }) }]);
    let done = false;
    const waiting = awaitSnapshotPurged(state, AT, ['m-1'], 60_000).then(() => {
      done = true;
    });
    // Not before the record reads as purged in the store.
    expect(await state.admission.unpurged(KEY, ['m-1'])).toEqual(['m-1']);
    expect(done).toBe(false);
    await state.admission.saveStates(6, [{ key: KEY, state: stateWith({ 'm-1': 'purged' }) }]);
    await waiting;
    expect(done).toBe(true);
  });

  it('reads a state stored under the plain subject key before keyed state keys, until write-admission moves it', async () => {
    const state = openState();
    await state.admission.saveStates(5, [{ key: AT.legacyKey, state: stateWith({ 'm-1': 'purged' }) }]);
    await expect(awaitSnapshotPurged(state, AT, ['m-1'], 0)).resolves.toBeUndefined();
    // Moved: stored under the new key, the plain one removed in the same round trip.
    await state.admission.saveStates(6, [{ key: AT.key, state: stateWith({ 'm-1': 'purged' }), movedFrom: AT.legacyKey }]);
    expect(await state.kv.keys(state.keys.admissionState('acme/cust-1'))).toEqual([]);
    const [moved] = await state.admission.load([AT.key], [AT.legacyKey]);
    expect(moved).toEqual({ version: 6, state: stateWith({ 'm-1': 'purged' }) });
  });
});

/** A copy whose erasure answers what the test says, recording when it was asked. */
function copy(name: string, state: CopyErasureState, asked: string[], rewritesAll = false): ErasableCopy {
  return {
    copy: name,
    rewritesAll,
    eraseDeleted: () => {
      asked.push(name);
      return Promise.resolve(state);
    },
  };
}

describe('the key target and the copies\' files', () => {
  it('asks again later while a copy still holds deleted documents, and rewrites no whole store before the others are through', async () => {
    const asked: string[] = [];
    const copies = [copy('index', 'pending_compaction', asked), copy('summaries', 'erased', asked), copy('state', 'erased', asked, true)];
    await expect(eraseCopies(copies, Date.now(), Date.now() + 60_000)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    expect(asked).toEqual(['index', 'summaries']);
  });

  it('once the wait is over, says what each copy holds, the whole-store rewrite last', async () => {
    const asked: string[] = [];
    const copies = [copy('state', 'erased', asked, true), copy('index', 'pending_compaction', asked), copy('summaries', 'erased', asked)];
    expect(await eraseCopies(copies, Date.now(), Date.now() - 1)).toEqual(['index:pending_compaction', 'summaries:erased', 'state:erased']);
    expect(asked).toEqual(['index', 'summaries', 'state']);
  });

  it('waits the setting after the task, never into the last part of the job\'s deadline, and not at all when the setting is zero', () => {
    const issuedAt = Date.parse('2026-12-07T10:00:00.000Z');
    // A task issued early: the whole wait fits.
    expect(erasureWaitUntil(issuedAt, 45_000, issuedAt + 120_000)).toBe(issuedAt + 45_000);
    // A task issued late (the targets took long under a fault): the wait ends before the deadline's margin.
    expect(erasureWaitUntil(issuedAt, 45_000, issuedAt + 30_000)).toBe(issuedAt + 30_000 - DEADLINE_MARGIN_MS);
    expect(erasureWaitUntil(issuedAt, 0, issuedAt + 120_000)).toBe(issuedAt);
  });
});
