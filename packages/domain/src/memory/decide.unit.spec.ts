import { describe, expect, it } from 'vitest';
import { MemoryEvent, type MemoryCommand } from '@gm/contracts';
import { decide } from './decide.ts';
import { evolve, fold } from './evolve.ts';
import {
  CTX, DAY, HOUR, MINUTE, T0, after, deleteMemory, expire, forget, history, promote, purge, reject, revoke, stateOf,
  tombstone, write,
} from './fixtures.ts';
import { initialState } from './state.ts';

/** The version an event gives to `id`, if it is about `id`. */
const versionOf = (event: MemoryEvent, id: string): number | undefined => {
  switch (event.type) {
    case 'MemoryWritten':
      return event.data.record.id === id ? event.data.record.version : undefined;
    case 'SubjectForgotten':
      return event.data.records.find((r) => r.id === id)?.version;
    default:
      return event.data.id === id ? event.data.version : undefined;
  }
};

// A long life: quarantined, updated, promoted, corrected, deleted, tombstoned, purged.
const lifeOfMem1: MemoryCommand[] = [
  write(T0, { trust: 'untrusted' }),
  write(after(T0, MINUTE), { trust: 'untrusted', expectedVersion: 1, content: 'second draft' }),
  promote(after(T0, HOUR), { expectedVersion: 2 }),
  promote(after(T0, 2 * HOUR), { expectedVersion: 3, visibility: 'team' }),
  write(after(T0, 3 * HOUR), { id: 'mem-2', supersedesId: 'mem-1', visibility: 'team' }),
  deleteMemory(after(T0, 4 * HOUR)),
  tombstone(after(T0, 4 * HOUR)),
  purge(after(T0, 5 * HOUR)),
];
const expiringThenForgotten: MemoryCommand[] = [
  write(T0, { expiresAt: after(T0, DAY) }),
  expire(after(T0, DAY)),
  forget(after(T0, 2 * DAY), { jobId: 'job-forget' }),
  tombstone(after(T0, 2 * DAY), { jobId: 'job-forget' }),
  purge(after(T0, 3 * DAY), { jobId: 'job-forget' }),
];

describe('the memory decider as a whole (§3)', () => {
  it.each([
    {
      name: 'review, correction and deletion',
      commands: lifeOfMem1,
      statuses: ['quarantined', 'quarantined', 'active', 'active', 'superseded', 'revocation_pending', 'tombstoned', 'purged'],
    },
    {
      name: 'expiry and forgetting',
      commands: expiringThenForgotten,
      statuses: ['active', 'expired', 'revocation_pending', 'tombstoned', 'purged'],
    },
  ])('moves a version up by exactly 1 per transition ($name)', ({ commands, statuses }) => {
    const versions = history(commands).flatMap((e) => versionOf(e, 'mem-1') ?? []);
    expect(versions).toEqual(statuses.map((_, i) => i + 1));

    let state = initialState();
    const seen: string[] = [];
    for (const command of commands) {
      state = fold(decide(command, state, CTX).events, state);
      const status = state.records['mem-1']?.meta.status;
      if (status !== undefined && seen.at(-1) !== status) seen.push(status);
    }
    expect(seen).toEqual([...new Set(statuses)]);
  });

  it('reports in each result the version and status the events lead to', () => {
    let state = initialState();
    for (const command of lifeOfMem1) {
      const { events, result } = decide(command, state, CTX);
      state = fold(events, state);
      if (result.id !== undefined) {
        expect(state.records[result.id]?.meta).toMatchObject({ version: result.version, status: result.status });
      }
    }
  });

  it('emits only events that satisfy the published event schema, each with its own event id', () => {
    const events = [
      ...history(lifeOfMem1),
      ...history(expiringThenForgotten),
      ...history([write(T0, { trust: 'untrusted' }), reject(after(T0, HOUR), { expectedVersion: 1 })]),
      ...history([write(T0), revoke(after(T0, HOUR), { jobId: 'job-r' })]),
    ];
    for (const event of events) expect(MemoryEvent.safeParse(event).success, event.type).toBe(true);
    const ids = history(lifeOfMem1).map((e) => e.metadata.eventId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('never changes the state it decides on', () => {
    let state = initialState();
    for (const command of lifeOfMem1) {
      const before = structuredClone(state);
      const { events } = decide(command, state, CTX);
      expect(state).toEqual(before);
      state = fold(events, state);
    }
    const before = structuredClone(state);
    expect(() => decide(write(after(T0, DAY), { expectedVersion: 7 }), state, CTX)).toThrow();
    expect(state).toEqual(before);
  });

  it('folds the same events into deep-equal states, and decides the same command the same way (determinism)', () => {
    const events = history([...lifeOfMem1, write(after(T0, DAY), { id: 'mem-3', trust: 'untrusted' }), forget(after(T0, 2 * DAY))]);
    expect(events.at(-1)?.type).toBe('SubjectForgotten');
    expect(fold(events, initialState())).toEqual(fold(events, initialState()));
    const state = stateOf(history([write(T0)]));
    const command = write(after(T0, HOUR), { id: 'mem-2', supersedesId: 'mem-1' });
    expect(decide(command, state, CTX)).toEqual(decide(command, state, CTX));
  });
});

describe('evolve is total (§3: replay never stops)', () => {
  // Real events about mem-x, applied to a state that has never seen mem-x.
  const aboutMemX = history([
    write(T0, { id: 'mem-x', trust: 'untrusted' }),
    promote(after(T0, HOUR), { id: 'mem-x', expectedVersion: 1 }),
    write(after(T0, HOUR), { id: 'mem-y', supersedesId: 'mem-x' }),
  ])
    .concat(history([write(T0, { id: 'mem-x', expiresAt: after(T0, DAY) }), expire(after(T0, DAY), { id: 'mem-x' })]))
    .concat(history([
      write(T0, { id: 'mem-x' }),
      deleteMemory(after(T0, HOUR), { id: 'mem-x' }),
      tombstone(after(T0, HOUR), { id: 'mem-x' }),
      purge(after(T0, HOUR), { id: 'mem-x' }),
    ]))
    .concat(history([write(T0, { id: 'mem-x', trust: 'untrusted' }), reject(after(T0, HOUR), { id: 'mem-x', expectedVersion: 1 })]))
    .filter((e) => e.type !== 'MemoryWritten' && e.type !== 'SubjectForgotten');
  const unrelated = stateOf(history([write(T0, { id: 'mem-1' })]));

  const label = (e: MemoryEvent): string => (e.type === 'MemoryTombstoned' ? `${e.type} (${e.data.reason})` : e.type);
  it.each(aboutMemX.map((event) => ({ name: label(event), event })))(
    'leaves the state unchanged for a $name about an unknown record',
    ({ event }) => {
      const next = evolve(unrelated, event);
      expect(next.records).toEqual(unrelated.records);
      // Nor does it remember an idempotency key for a transition that never happened here.
      expect(next.idempotency).toEqual(unrelated.idempotency);
    },
  );

  it('covers every per-record event type', () => {
    expect(new Set(aboutMemX.map((e) => e.type))).toEqual(
      new Set(['MemoryPromoted', 'MemorySuperseded', 'MemoryExpired', 'MemoryRevocationRequested', 'MemoryTombstoned', 'MemoryPurged']),
    );
  });
});
