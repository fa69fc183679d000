import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERASED_CONTENT_HASH, type MemoryEvent } from '@gm/contracts';
import { openEmbeddedFixture, sha256Hex, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import {
  HOUR, T0, TENANT, after, deleteMemory, forget, history, purge, tombstone, write,
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
});
