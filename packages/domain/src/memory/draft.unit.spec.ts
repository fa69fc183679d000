import { describe, expect, it } from 'vitest';
import { decide } from './decide.ts';
import { draftOf, evolve, evolveDraft, pruneIdempotency } from './evolve.ts';
import { CTX, IDEMPOTENCY_WINDOW_MS, MINUTE, T0, after, deleteMemory, history, promote, write } from './fixtures.ts';
import { initialState } from './state.ts';

describe('folding in place (draftOf / evolveDraft)', () => {
  const events = history([
    write(T0, { trust: 'untrusted' }, { idempotencyKey: 'k-1' }),
    write(after(T0, MINUTE), { id: 'mem-2' }),
    promote(after(T0, 2 * MINUTE), { expectedVersion: 1 }),
    deleteMemory(after(T0, 3 * MINUTE), { id: 'mem-2' }),
  ]);

  it('reaches the state evolve reaches, and leaves the state it started from untouched', () => {
    const start = events.slice(0, 1).reduce(evolve, initialState());
    const before = JSON.stringify(start);
    const draft = draftOf(start);
    for (const e of events.slice(1)) evolveDraft(draft, e);
    expect(draft).toEqual(events.slice(1).reduce(evolve, start));
    expect(JSON.stringify(start)).toBe(before);
  });
});

describe('pruneIdempotency', () => {
  const first = write(T0, {}, { idempotencyKey: 'k-1' });
  const state = history([first]).reduce(evolve, initialState());

  it('keeps a slot inside the window: a retry still gets the first result and no event', () => {
    const draft = draftOf(state);
    pruneIdempotency(draft, after(T0, IDEMPOTENCY_WINDOW_MS), IDEMPOTENCY_WINDOW_MS);
    expect(Object.keys(draft.idempotency)).toHaveLength(1);
    const retry = decide(write(after(T0, IDEMPOTENCY_WINDOW_MS), { id: 'mem-9' }, { idempotencyKey: 'k-1' }), draft, CTX);
    expect(retry.events).toEqual([]);
    expect(retry.result).toMatchObject({ id: 'mem-1', version: 1 });
  });

  it('drops a slot past the window, where decide would ignore it anyway', () => {
    const late = after(T0, IDEMPOTENCY_WINDOW_MS + MINUTE);
    const draft = draftOf(state);
    pruneIdempotency(draft, late, IDEMPOTENCY_WINDOW_MS);
    expect(draft.idempotency).toEqual({});
    const command = write(late, { id: 'mem-9' }, { idempotencyKey: 'k-1' });
    expect(decide(command, draft, CTX)).toEqual(decide(command, state, CTX));
  });
});

describe('folding an event again (a restart reads from a checkpoint its snapshot had passed)', () => {
  it('does not hand a reused idempotency slot back its result from before the window passed', () => {
    const late = after(T0, IDEMPOTENCY_WINDOW_MS + 2 * MINUTE);
    const events = history([
      write(T0, { trust: 'untrusted', kind: 'fact' }),
      write(T0, { id: 'mem-2', trust: 'untrusted', kind: 'fact' }),
      promote(after(T0, MINUTE), { expectedVersion: 1 }, { idempotencyKey: 'k-p' }),
      // The window has passed: the reviewer's key may name a new command.
      promote(late, { id: 'mem-2', expectedVersion: 1 }, { idempotencyKey: 'k-p' }),
    ]);
    const state = events.reduce(evolve, initialState());
    const retry = () => promote(after(late, MINUTE), { id: 'mem-2', expectedVersion: 1 }, { idempotencyKey: 'k-p' });
    expect(decide(retry(), state, CTX).events).toEqual([]);

    const oldPromotion = events.find((e) => e.type === 'MemoryPromoted' && e.data.id === 'mem-1');
    if (oldPromotion === undefined) throw new Error('no promotion of mem-1');
    const draft = draftOf(state);
    evolveDraft(draft, oldPromotion);
    expect(draft).toEqual(state);
    const again = decide(retry(), draft, CTX);
    expect(again.events).toEqual([]);
    expect(again.result).toMatchObject({ id: 'mem-2', version: 2, status: 'active' });
  });
});
