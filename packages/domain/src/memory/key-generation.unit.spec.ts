/**
 * Key generations (§8.5): each forget retires the subject's current key-encryption key
 * generation, and every write after it names the next one, so no new content is ever sealed
 * under a key the forget is about to destroy.
 */
import { describe, expect, it } from 'vitest';
import { MemoryEvent, type EventOf, type MemoryCommand } from '@gm/contracts';
import { deciderSpec } from '@gm/testing/decider-spec';
import { decide } from './decide.ts';
import { evolve, fold } from './evolve.ts';
import { CTX, HOUR, T0, after, forget, history, stateOf, write } from './fixtures.ts';
import { initialState, type SubjectState } from './state.ts';

const spec = deciderSpec({ decide: (c: MemoryCommand, s: SubjectState) => decide(c, s, CTX), evolve, initialState });
const T1 = after(T0, HOUR);
const T2 = after(T1, HOUR);
const T3 = after(T2, HOUR);

function only<T extends MemoryEvent['type']>(events: MemoryEvent[], type: T): EventOf<T> {
  const matching = events.filter((e): e is EventOf<T> => e.type === type);
  expect(matching).toHaveLength(1);
  const [event] = matching;
  if (event === undefined) throw new Error(`expected one ${type}`);
  // What the decider emits must pass the contract the bus consumers parse with.
  expect(MemoryEvent.parse(event)).toEqual(event);
  return event;
}

describe('key generations', () => {
  it('a first write names no key generation (generation 1, as before content encryption)', () => {
    spec.given([]).when(write(T0)).then(({ events }) => {
      const written = only(events, 'MemoryWritten');
      expect(written.data).not.toHaveProperty('keyGeneration');
    });
  });

  it('a forget retires generation 1; the next write names generation 2', () => {
    const given = history([write(T0), forget(T1)]);
    expect(only(given, 'SubjectForgotten').data.keyGeneration).toBe(1);
    spec.given(given).when(write(T2, { id: 'mem-2' })).then(({ events }) => {
      expect(only(events, 'MemoryWritten').data.keyGeneration).toBe(2);
    });
  });

  it('a forget of a subject with nothing stored still starts a new generation', () => {
    const given = history([forget(T0)]);
    expect(only(given, 'SubjectForgotten').data.keyGeneration).toBe(1);
    expect(stateOf(given).keyGeneration).toBe(2);
  });

  it('folding the same SubjectForgotten twice (a redelivery) does not skip a generation', () => {
    const given = history([write(T0), forget(T1)]);
    const forgotten = only(given, 'SubjectForgotten');
    const twice = [...given, forgotten];
    expect(stateOf(twice).keyGeneration).toBe(2);
    spec.given(twice).when(write(T2, { id: 'mem-2' })).then(({ events }) => {
      expect(only(events, 'MemoryWritten').data.keyGeneration).toBe(2);
    });
  });

  it('two forgets: the second retires generation 2, and writes after it name generation 3', () => {
    const given = history([write(T0), forget(T1, { jobId: 'job-f1' }), write(T2, { id: 'mem-2' }), forget(T3, { jobId: 'job-f2' })]);
    const forgets = given.filter((e): e is EventOf<'SubjectForgotten'> => e.type === 'SubjectForgotten');
    expect(forgets.map((e) => [e.data.jobId, e.data.keyGeneration])).toEqual([['job-f1', 1], ['job-f2', 2]]);
    // The second forget covers the record written under generation 2.
    expect(forgets[1]?.data.records.map((r) => r.id)).toEqual(['mem-2']);
    spec.given(given).when(write(after(T3, HOUR), { id: 'mem-3' })).then(({ events }) => {
      expect(only(events, 'MemoryWritten').data.keyGeneration).toBe(3);
    });
    // Replaying the older forget again cannot take the generation back.
    expect(fold([forgets[0] as MemoryEvent], stateOf(given)).keyGeneration).toBe(3);
  });

  it('a SubjectForgotten from before content encryption (no keyGeneration) counts as retiring generation 1', () => {
    const [legacy] = history([forget(T0)]);
    if (legacy?.type !== 'SubjectForgotten') throw new Error('expected a SubjectForgotten');
    const { keyGeneration: _dropped, ...data } = legacy.data;
    expect(stateOf([{ ...legacy, data }]).keyGeneration).toBe(2);
  });
});
