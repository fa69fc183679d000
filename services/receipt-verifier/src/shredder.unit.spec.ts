/**
 * The `key` target waits for write-admission's rewrite of the subject's snapshot before it makes
 * the stores' files forget deleted bytes (§8.4): the state stored before the purge held the
 * records' hashes and provenance, and a rewrite that landed after the checkpoint would stay in
 * the write-ahead log, the old page in the file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { subjectKey } from '@gm/contracts';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { awaitSnapshotPurged } from './shredder.ts';

function openState(): StateStore {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-shredder-'));
  const state = new StateStore(createSqliteKeyValueStore({ file: path.join(dir, 'state.db') }), 'gm:');
  onTestFinished(async () => {
    await state.kv.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return state;
}

const KEY = subjectKey('acme', 'cust-1');
const stateWith = (statuses: Record<string, string>) => ({
  records: Object.fromEntries(Object.entries(statuses).map(([id, status]) => [id, { meta: { id, status } }])),
  idempotency: {},
});

describe('the key target and write-admission\'s snapshot', () => {
  it('does not go on while the stored state holds a job record unpurged, or does not hold it yet (a flush may be on its way)', async () => {
    const state = openState();
    // Nothing stored: the first flush of the subject may still be about to land.
    await expect(awaitSnapshotPurged(state, 'acme', 'cust-1', ['m-1'], 0)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    await state.admission.saveStates(5, [{ key: KEY, state: stateWith({ 'm-1': 'tombstoned', 'm-2': 'purged' }) }]);
    await expect(awaitSnapshotPurged(state, 'acme', 'cust-1', ['m-1', 'm-2'], 0)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE' });
    // Records of other subjects' states, or of this subject outside the job, are not waited for.
    await expect(awaitSnapshotPurged(state, 'acme', 'cust-1', ['m-2'], 0)).resolves.toBeUndefined();
  });

  it('goes on once write-admission stored the purged state', async () => {
    const state = openState();
    await state.admission.saveStates(5, [{ key: KEY, state: stateWith({ 'm-1': 'tombstoned' }) }]);
    let done = false;
    const waiting = awaitSnapshotPurged(state, 'acme', 'cust-1', ['m-1'], 60_000).then(() => {
      done = true;
    });
    // Not before the record reads as purged in the store.
    expect(await state.admission.unpurged(KEY, ['m-1'])).toEqual(['m-1']);
    expect(done).toBe(false);
    await state.admission.saveStates(6, [{ key: KEY, state: stateWith({ 'm-1': 'purged' }) }]);
    await waiting;
    expect(done).toBe(true);
  });
});
