import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERASED_CONTENT_HASH, ERASED_SUBJECT_ID, type MemoryEvent } from '@gm/contracts';
import { openEmbeddedFixture, sha256Hex, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import {
  HOUR, SUBJECT, T0, TENANT, after, deleteMemory, forget, history, purge, tombstone, write,
} from '@gm/domain/fixtures';
import { projectEvents } from './projector.ts';

const CONTENT = 'Wryneck door code is 8812';
const HASH = sha256Hex(CONTENT);

/*
 * The projector's fold on the embedded state store, driven by the events the decider really
 * emits: what stays of a record once it is purged (§6.4, §8.4).
 */
describe('projector: a purged record keeps neither its content hash nor its history', () => {
  let f: EmbeddedFixture;
  beforeEach(async () => {
    f = await openEmbeddedFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  const written = [write(T0, { content: CONTENT, contentHash: HASH, visibility: 'team' })];
  const project = async (events: MemoryEvent[]) => {
    // One event per batch, and all at once: the projector folds batches of any size the same.
    for (const e of events) await projectEvents(f.state, [e]);
  };

  it('keeps every version while the record is live, and after a deletion request until the purge', async () => {
    const events = history([...written, deleteMemory(after(T0, HOUR)), tombstone(after(T0, 2 * HOUR))]);
    await project(events);
    expect((await f.state.history.versions(TENANT, 'mem-1', 3)).map((v) => v.record.status)).toEqual(['active', 'revocation_pending', 'tombstoned']);
    expect((await f.state.records.get(TENANT, 'mem-1'))?.contentHash).toBe(HASH);
  });

  it.each([
    ['a delete', [deleteMemory(after(T0, HOUR))]],
    ['a forget', [forget(after(T0, HOUR), { jobId: 'job-1' })]],
  ] as const)('removes the history and the content hash at the purge of %s, batch by batch or in one batch', async (_what, request) => {
    const events = history([...written, ...request, tombstone(after(T0, 2 * HOUR)), purge(after(T0, 3 * HOUR))]);
    for (const [i, fold] of [(es: MemoryEvent[]) => project(es), (es: MemoryEvent[]) => projectEvents(f.state, es)].entries()) {
      if (i > 0) {
        await f.close();
        f = await openEmbeddedFixture();
      }
      await fold(events);
      const meta = await f.state.records.get(TENANT, 'mem-1');
      expect(meta).toMatchObject({ status: 'purged', version: 4, contentHash: ERASED_CONTENT_HASH });
      expect(await f.state.history.versions(TENANT, 'mem-1', 4)).toEqual([]);
      const everything = await Promise.all((await f.state.kv.keys('')).map(async (k) => `${k}=${await f.state.kv.get(k)}`));
      expect(everything.join('\n')).not.toContain(HASH);
    }
  });

  it('at the purge, the id stays taken for every subject, but neither the record, its claim nor the subject index names the subject', async () => {
    const subject = SUBJECT;
    const events = history([...written, forget(after(T0, HOUR), { jobId: 'job-1' }), tombstone(after(T0, 2 * HOUR)), purge(after(T0, 3 * HOUR))]);
    const tombstoned = events.findIndex((e) => e.type === 'MemoryTombstoned');
    await project(events.slice(0, tombstoned));
    expect(await f.state.records.idsOfSubject(TENANT, subject)).toEqual(['mem-1']);
    expect(await f.state.idClaims.owner(TENANT, 'mem-1')).toBe(subject);
    await project(events.slice(tombstoned));
    expect(await f.state.records.get(TENANT, 'mem-1')).toMatchObject({ status: 'purged', subjectId: ERASED_SUBJECT_ID });
    expect(await f.state.records.idsOfSubject(TENANT, subject)).toEqual([]);
    expect(await f.state.idClaims.owner(TENANT, 'mem-1')).not.toContain(subject);
    expect(await f.state.idClaims.claimAll(TENANT, [{ id: 'mem-1', subjectId: subject }, { id: 'mem-1', subjectId: 'someone-else' }])).toEqual([false, false]);
    // No key or value of what the projector keeps names the subject any more.
    const everything = await Promise.all((await f.state.kv.keys('')).map(async (k) => `${k}=${await f.state.kv.get(k)}`));
    expect(everything.join('\n')).not.toContain(subject);
  });
});
