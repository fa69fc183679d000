/** The record's lifecycle table (§3): one status after each event, one meaning per status. */
import { describe, expect, it } from 'vitest';
import { ERASED_CONTENT_HASH, RecordStatus, type MemoryEvent } from '@gm/contracts';
import { endedRecordIds } from './ended.ts';
import { fold } from './evolve.ts';
import {
  DAY, HOUR, MINUTE, T0, after, deleteMemory, expire, forget, history, promote, purge, reject, revoke, tombstone, write,
} from './fixtures.ts';
import { initialState } from './state.ts';
import { isLive, isReadableById, isRetained, isRetired, isSearchable, recordTransitions } from './transitions.ts';

const last = (events: MemoryEvent[]): MemoryEvent => {
  const event = events.at(-1);
  if (event === undefined) throw new Error('no event');
  return event;
};
const T1 = after(T0, HOUR);

describe('what each status means', () => {
  it('every status is live or retired, never both; search and reads by id see live records only', () => {
    for (const status of RecordStatus.options) {
      expect(isLive(status)).toBe(!isRetired(status));
      if (isSearchable(status)) expect(isReadableById(status)).toBe(true);
      if (isReadableById(status)) expect(isLive(status)).toBe(true);
    }
    expect(RecordStatus.options.filter(isSearchable)).toEqual(['active']);
    expect(RecordStatus.options.filter(isReadableById)).toEqual(['active', 'superseded']);
    expect(RecordStatus.options.filter(isRetired)).toEqual(['revocation_pending', 'tombstoned', 'purged']);
    expect(RecordStatus.options.filter(isRetained)).toEqual(['tombstoned']);
  });
});

describe('the status each event leaves a record in', () => {
  const cases: Array<{ event: string; events: MemoryEvent[]; status: RecordStatus }> = [
    { event: 'MemoryPromoted', events: history([write(T0, { trust: 'untrusted' }), promote(T1, { expectedVersion: 1 })]), status: 'active' },
    { event: 'MemorySuperseded', events: history([write(T0), write(after(T0, MINUTE), { id: 'mem-2', supersedesId: 'mem-1' })]), status: 'superseded' },
    { event: 'MemoryExpired', events: history([write(T0, { expiresAt: after(T0, DAY) }), expire(after(T0, DAY))]), status: 'expired' },
    { event: 'MemoryRevocationRequested (revoke)', events: history([write(T0), revoke(T1)]), status: 'revocation_pending' },
    { event: 'MemoryRevocationRequested (delete)', events: history([write(T0), deleteMemory(T1)]), status: 'revocation_pending' },
    { event: 'SubjectForgotten', events: history([write(T0), forget(T1)]), status: 'revocation_pending' },
    { event: 'MemoryTombstoned', events: history([write(T0), deleteMemory(T1), tombstone(T1)]), status: 'tombstoned' },
    { event: 'MemoryTombstoned (rejected)', events: history([write(T0, { trust: 'untrusted' }), reject(T1, { expectedVersion: 1 })]), status: 'tombstoned' },
    { event: 'MemoryPurged', events: history([write(T0), deleteMemory(T1), tombstone(T1), purge(T1)]), status: 'purged' },
  ];

  it.each(cases)('$event → $status, in the table and in the decider\'s state alike', ({ events, status }) => {
    const event = last(events.filter((e) => recordTransitions(e).some((t) => t.id === 'mem-1')));
    const moved = recordTransitions(event).find((t) => t.id === 'mem-1');
    expect(moved?.patch.status).toBe(status);
    expect(fold(events, initialState()).records['mem-1']?.meta.status).toBe(status);
    // Every index of active records drops exactly the records an event moves out of search.
    expect(endedRecordIds(event).includes('mem-1')).toBe(!isSearchable(status));
  });

  it('a write creates a record and moves none', () => {
    expect(recordTransitions(last(history([write(T0)])))).toEqual([]);
  });

  it('a purge takes the content hash with the content (§8.4)', () => {
    const purged = last(history([write(T0), deleteMemory(T1), tombstone(T1), purge(T1)]));
    expect(recordTransitions(purged)[0]?.patch.contentHash).toBe(ERASED_CONTENT_HASH);
  });

  it('a purge takes what names the record\'s sources with it (a uri is about the subject too); their kinds and times stay', () => {
    const observedAt = T0;
    const provenance = [{ source: 'tool' as const, uri: 'crm://patients/jane-7731/oncology', eventId: 'crm-evt-9', observedAt }, { source: 'user' as const, observedAt }];
    const events = history([write(T0, { provenance }), deleteMemory(T1), tombstone(T1), purge(T1)]);
    const record = fold(events, initialState()).records['mem-1'];
    expect(record?.meta).toMatchObject({ status: 'purged', contentHash: ERASED_CONTENT_HASH, provenance: [{ source: 'tool', observedAt }, { source: 'user', observedAt }] });
    expect(JSON.stringify(record)).not.toMatch(/crm:|crm-evt/);
    // Any other move keeps them: the record is still what it was.
    expect(fold(events.slice(0, -1), initialState()).records['mem-1']?.meta.provenance).toEqual(provenance);
  });

  it('a forget moves live records and revoked ones it found tombstoned; a record retired meanwhile stays as it is', () => {
    const forgotten = last(history([write(T0), forget(T1)]));
    const [t] = recordTransitions(forgotten);
    expect(t?.from).toEqual(['quarantined', 'active', 'superseded', 'expired']);
    expect(t?.deletion).toMatchObject({ reason: 'forgotten' });
  });
});
