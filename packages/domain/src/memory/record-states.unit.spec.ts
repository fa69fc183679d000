import { describe, expect, it } from 'vitest';
import { ERASED_CONTENT } from '@gm/contracts';
import { DAY, T0, after, deleteMemory, history, promote, write } from './fixtures.ts';
import { lastIndexedStates } from './record-states.ts';

const expiresAt = after(T0, DAY);
const summary = (events: Parameters<typeof lastIndexedStates>[0]) =>
  lastIndexedStates(events).map((s) => (s.kind === 'absent' ? `${s.recordId}: absent` : `${s.recordId}: ${s.meta.status} v${s.meta.version} ${s.content === undefined ? 'content?' : 'with content'}`));

describe('lastIndexedStates: what a batch leaves of each record for an index of active records', () => {
  it('an active write is present with its content; a quarantined one is absent until promoted, then present', () => {
    expect(summary(history([write(T0, { expiresAt })]))).toEqual(['mem-1: active v1 with content']);
    const quarantined = history([write(T0, { expiresAt, trust: 'untrusted' })]);
    expect(summary(quarantined)).toEqual(['mem-1: absent']);
    const promoted = history([write(T0, { expiresAt, trust: 'untrusted' }), promote(after(T0, 1000), { expectedVersion: 1 })]);
    expect(summary(promoted)).toEqual(['mem-1: active v2 with content']);
    // The promotion alone (its write in an earlier batch) says whether it carried the content.
    const alone = promoted.slice(1);
    expect(lastIndexedStates(alone)[0]?.kind).toBe('present');
  });

  it('each record\'s last change decides, in the order of those last changes', () => {
    const events = history([write(T0, { expiresAt }), write(after(T0, 1), { id: 'mem-2', expiresAt, expectedVersion: 0 }), deleteMemory(after(T0, 2))]);
    expect(summary(events)).toEqual(['mem-2: active v1 with content', 'mem-1: absent']);
  });

  it('erased content (a replay after a forget) is never present', () => {
    const [written] = history([write(T0, { expiresAt })]);
    if (written?.type !== 'MemoryWritten') throw new Error('no write');
    const erased = { ...written, data: { ...written.data, record: { ...written.data.record, content: ERASED_CONTENT } } };
    expect(summary([erased])).toEqual(['mem-1: absent']);
  });
});
