import { describe, expect, it } from 'vitest';
import { T0, after, deleteMemory, expire, history, write } from './fixtures.ts';
import { endedRecordIds, touchedRecordIds } from './ended.ts';

const DAY = 24 * 3_600_000;
const expiresAt = after(T0, DAY);

describe('endedRecordIds: which records an event takes out of retrieval for good', () => {
  it('a write ends nothing and touches its record', () => {
    const [written] = history([write(T0, { expiresAt })]);
    if (written === undefined) throw new Error('no event');
    expect(endedRecordIds(written)).toEqual([]);
    expect(touchedRecordIds(written)).toEqual(['mem-1']);
  });

  it('an expiry and a deletion request each end their record', () => {
    const expired = history([write(T0, { expiresAt }), expire(expiresAt)]).at(-1);
    expect(expired?.type).toBe('MemoryExpired');
    expect(expired === undefined ? [] : endedRecordIds(expired)).toEqual(['mem-1']);
    const deleted = history([write(T0, { expiresAt }), deleteMemory(after(T0, 1000))]).at(-1);
    expect(deleted?.type).toBe('MemoryRevocationRequested');
    expect(deleted === undefined ? [] : endedRecordIds(deleted)).toEqual(['mem-1']);
  });

  it('a superseding write ends the record it replaces', () => {
    const events = history([write(T0, { expiresAt }), write(after(T0, 1000), { id: 'mem-2', supersedesId: 'mem-1', expectedVersion: 0 })]);
    expect(events.map((e) => e.type)).toEqual(['MemoryWritten', 'MemoryWritten', 'MemorySuperseded']);
    expect(events.flatMap(endedRecordIds)).toEqual(['mem-1']);
    expect(events.flatMap(touchedRecordIds)).toEqual(['mem-1', 'mem-2', 'mem-1']);
  });
});
