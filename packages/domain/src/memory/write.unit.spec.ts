import { describe, expect, it } from 'vitest';
import type { MemoryCommand, MemoryKind } from '@gm/contracts';
import { keyOf } from '@gm/ids/key-encoding';
import { deciderSpec } from '@gm/testing/decider-spec';
import { DEFAULT_TTL_POLICY } from '../ttl.ts';
import { decide, idempotencySlot } from './decide.ts';
import { evolve, fold } from './evolve.ts';
import {
  CONTENT, CTX, DAY, HOUR, IDEMPOTENCY_WINDOW_MS, MINUTE, OTHER_AGENT, SECOND, SUBJECT, T0, TENANT, WRITER,
  after, deleteMemory, expire, forget, history, promote, purge, stateOf, tombstone, write,
} from './fixtures.ts';
import { initialState, type SubjectState } from './state.ts';

const spec = deciderSpec({ decide: (c: MemoryCommand, s: SubjectState) => decide(c, s, CTX), evolve, initialState });
const T1 = after(T0, HOUR);
/** The writer's slot of a caller's key (decide.ts idempotencySlot). */
const slotOf = (key: string) => keyOf(TENANT, WRITER.principalId, WRITER.agentId, 'key', key);

describe('WriteMemory: admission (§5)', () => {
  it('admits a trusted write as active, version 1, with writer, tenant and subject from the metadata', () => {
    spec.given([]).when(write(T0, { trust: 'trusted' })).then(({ events, result }) => {
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        type: 'MemoryWritten',
        data: {
          record: {
            id: 'mem-1', status: 'active', version: 1, trust: 'trusted', agentId: WRITER.agentId,
            tenantId: TENANT, subjectId: SUBJECT, content: CONTENT, createdAt: T0, policyRevision: 3,
          },
        },
      });
      expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' });
    });
  });

  it('carries the writer\'s own embedding into the event beside the record, never into it', () => {
    const embedding = { model: 'm@1', vector: [0.6, 0.8] };
    spec.given([]).when(write(T0, { trust: 'trusted', embedding })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryWritten', data: { embedding } }]);
      expect((events[0] as { data: { record: object } }).data.record).not.toHaveProperty('embedding');
    });
    spec.given([]).when(write(T0, { trust: 'trusted' })).then(({ events }) => {
      expect((events[0] as { data: object }).data).not.toHaveProperty('embedding');
    });
  });

  it('quarantines an untrusted write', () => {
    spec.given([]).when(write(T0, { trust: 'untrusted' })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryWritten', data: { record: { status: 'quarantined', trust: 'untrusted' } } }]);
      expect(result).toEqual({ id: 'mem-1', version: 1, status: 'quarantined' });
    });
  });

  it('rejects a writer claiming trust "verified": only a review grants it', () => {
    spec.given([]).when(write(T0, { trust: 'verified' })).thenThrows('MEM_VALIDATION');
  });

  it('requires expectedVersion 0 for a new id', () => {
    spec.given([]).when(write(T0, { expectedVersion: 1 })).thenThrows('MEM_CONFLICT');
  });

  it('rejects a stale or future expectedVersion and leaves the record as it was', () => {
    const given = spec.given(history([write(T0)]));
    given.when(write(T1, { expectedVersion: 0, content: 'changed' })).thenThrows('MEM_CONFLICT');
    given.when(write(T1, { expectedVersion: 2, content: 'changed' })).thenThrows('MEM_CONFLICT');
    expect(given.state.records['mem-1']?.meta.version).toBe(1);
    // The current version still works afterwards.
    given.when(write(T1, { expectedVersion: 1, content: 'changed' })).then(({ result }) => {
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'active' });
    });
  });

  it('lets the writer agent update in place: version +1, same createdAt, new content', () => {
    spec
      .given(history([write(T0)]))
      .when(write(T1, { expectedVersion: 1, content: 'Ada now prefers chat.' }))
      .then(({ events, result }) => {
        expect(events).toMatchObject([
          { type: 'MemoryWritten', data: { record: { id: 'mem-1', version: 2, createdAt: T0, content: 'Ada now prefers chat.' } } },
        ]);
        expect(result).toEqual({ id: 'mem-1', version: 2, status: 'active' });
      });
  });

  it('forbids another agent to update a memory, even one acting for the same person', () => {
    spec.given(history([write(T0)])).when(write(T1, { expectedVersion: 1 }, { actor: OTHER_AGENT })).thenThrows('MEM_FORBIDDEN');
  });

  it('forbids widening visibility on update: that is a reviewed promotion', () => {
    spec
      .given(history([write(T0, { visibility: 'private' })]))
      .when(write(T1, { expectedVersion: 1, visibility: 'team' }))
      .thenThrows('MEM_FORBIDDEN');
    spec
      .given(history([write(T0, { visibility: 'private' })]))
      .when(write(T1, { expectedVersion: 1, visibility: 'restricted', sensitivity: 'confidential' }))
      .thenThrows('MEM_FORBIDDEN');
  });

  it('allows narrowing visibility on update', () => {
    spec.given(history([write(T0, { visibility: 'team' })])).when(write(T1, { expectedVersion: 1, visibility: 'private' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryWritten', data: { record: { visibility: 'private', version: 2 } } }]);
    });
  });

  it('refuses to move a memory to another resource', () => {
    spec
      .given(history([write(T0, { resource: { kind: 'project', id: 'apollo' } })]))
      .when(write(T1, { expectedVersion: 1, resource: { kind: 'project', id: 'gemini' } }))
      .thenThrows('MEM_INVALID_TRANSITION');
    spec
      .given(history([write(T0, { resource: { kind: 'project', id: 'apollo' } })]))
      .when(write(T1, { expectedVersion: 1, resource: { kind: 'case', id: 'apollo' } }))
      .thenThrows('MEM_INVALID_TRANSITION');
  });

  it('refuses to update a superseded or expired memory', () => {
    const superseded = history([write(T0), write(T1, { id: 'mem-2', supersedesId: 'mem-1' })]);
    spec.given(superseded).when(write(after(T1, MINUTE), { expectedVersion: 2 })).thenThrows('MEM_INVALID_TRANSITION');
    const expiresAt = after(T0, DAY);
    const expired = history([write(T0, { expiresAt }), expire(expiresAt)]);
    spec.given(expired).when(write(after(expiresAt, MINUTE), { expectedVersion: 2 })).thenThrows('MEM_INVALID_TRANSITION');
  });
});

describe('WriteMemory: idempotency (§5.6)', () => {
  const first = write(T0, {}, { idempotencyKey: 'key-1' });

  const hashed = (hash: string) => ({ idempotencyKey: 'key-h', requestHash: hash.repeat(64) });

  it('returns the first result and no events for the same key and the same request within the window', () => {
    spec
      .given(history([write(T0, {}, hashed('a'))]))
      .when(write(after(T0, 5 * MINUTE), { id: 'mem-2' }, hashed('a')))
      .then(({ events, result }) => {
        expect(events).toEqual([]);
        expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' });
      });
  });

  it('refuses the same key for another request within the window: nothing written, the first record untouched', () => {
    const given = spec.given(history([write(T0, {}, hashed('a'))]));
    given.when(write(after(T0, 5 * MINUTE), { id: 'mem-2', content: 'something else' }, hashed('b'))).thenThrows('MEM_IDEMPOTENCY_MISMATCH');
    // The same agent's key, on another operation of the subject (a delete), is another request too.
    given.when(deleteMemory(after(T0, MINUTE), {}, { ...hashed('c'), actor: WRITER })).thenThrows('MEM_IDEMPOTENCY_MISMATCH');
  });

  it('gives the key to a new request once its window has passed', () => {
    spec
      .given(history([write(T0, {}, hashed('a'))]))
      .when(write(after(T0, IDEMPOTENCY_WINDOW_MS + SECOND), { id: 'mem-2' }, hashed('b')))
      .then(({ result }) => expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' }));
  });

  it('forgets the fingerprints of a forgotten subject\'s writes: a replayed key gets the first result whatever it sends (no content oracle)', () => {
    const forgotten = history([write(T0, {}, hashed('a')), forget(after(T0, MINUTE))]);
    expect(stateOf(forgotten).idempotency[slotOf('key-h')]).toEqual({ result: { id: 'mem-1', version: 1, status: 'active' }, at: T0 });
    const given = spec.given(forgotten);
    const answers = ['a', 'b'].map((guess) => {
      let answer: unknown;
      given.when(write(after(T0, 5 * MINUTE), { content: `guess ${guess}` }, hashed(guess))).then(({ events, result }) => {
        expect(events).toEqual([]);
        answer = result;
      });
      return answer;
    });
    expect(answers[0]).toEqual({ id: 'mem-1', version: 1, status: 'active' });
    expect(answers[1]).toEqual(answers[0]);
  });

  it('forgets the fingerprints of a purged record\'s writes, and only those', () => {
    const events = history([
      write(T0, {}, hashed('a')), write(T0, { id: 'mem-2' }, { idempotencyKey: 'key-other', requestHash: 'd'.repeat(64) }),
      deleteMemory(after(T0, MINUTE)), tombstone(after(T0, 2 * MINUTE)), purge(after(T0, 3 * MINUTE)),
    ]);
    const state = stateOf(events);
    expect(state.idempotency[slotOf('key-h')]?.requestHash).toBeUndefined();
    expect(state.idempotency[slotOf('key-other')]?.requestHash).toBe('d'.repeat(64));
    spec.given(events).when(write(after(T0, 5 * MINUTE), { content: 'a wrong guess' }, hashed('b')))
      .then(({ result }) => expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' }));
  });

  it('returns the first result for a key whose slot has no fingerprint (a command from before fingerprints), whatever the payload', () => {
    spec
      .given(history([first]))
      .when(write(after(T0, 5 * MINUTE), { id: 'mem-2', content: 'something else' }, { idempotencyKey: 'key-1' }))
      .then(({ events, result }) => {
        expect(events).toEqual([]);
        expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' });
      });
  });

  it('returns the first result at the very end of the window', () => {
    spec
      .given(history([first]))
      .when(write(after(T0, IDEMPOTENCY_WINDOW_MS), { id: 'mem-2' }, { idempotencyKey: 'key-1' }))
      .then(({ events, result }) => {
        expect(events).toEqual([]);
        expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' });
      });
  });

  it('evaluates the command again once the window has passed', () => {
    spec
      .given(history([first]))
      .when(write(after(T0, IDEMPOTENCY_WINDOW_MS + SECOND), { id: 'mem-2' }, { idempotencyKey: 'key-1' }))
      .then(({ events, result }) => {
        expect(events).toMatchObject([{ type: 'MemoryWritten', data: { record: { id: 'mem-2', version: 1 } } }]);
        expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' });
      });
  });

  it('after the window, a retry of the re-evaluated command gets that command\'s result', () => {
    const late = after(T0, IDEMPOTENCY_WINDOW_MS + SECOND);
    const second = write(late, { id: 'mem-2' }, { idempotencyKey: 'key-1' });
    spec
      .given(history([first, second]))
      .when(write(after(late, MINUTE), { id: 'mem-2' }, { idempotencyKey: 'key-1' }))
      .then(({ events, result }) => {
        expect(events).toEqual([]);
        expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' });
      });
  });

  it('uses the commandId as the key when no key is given', () => {
    const byId = write(T0, {}, { commandId: 'cmd-retry' });
    spec
      .given(history([byId]))
      .when(write(after(T0, MINUTE), { id: 'mem-2' }, { commandId: 'cmd-retry' }))
      .then(({ events, result }) => {
        expect(events).toEqual([]);
        expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' });
      });
  });

  it('keeps keys per principal: the same agent id acting for another principal cannot replay or probe a key (no result, no mismatch oracle)', () => {
    // The writer's own agent id, under another principal's capability: someone else (§3).
    const other = { ...WRITER, principalId: 'person-bob', runId: 'run-b' };
    const owner = { principalId: other.principalId, kind: 'person' as const };
    const given = spec.given(history([write(T0, {}, hashed('a'))]));
    // The same key with the first request's very body: a fresh write of its own, not the first record.
    given.when(write(after(T0, MINUTE), { id: 'mem-2', owner }, { ...hashed('a'), actor: other })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryWritten', data: { record: { id: 'mem-2', owner: { principalId: 'person-bob' } } } }]);
      expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' });
    });
    // The same key with other content: no MEM_IDEMPOTENCY_MISMATCH that would confirm the key was used.
    given.when(write(after(T0, MINUTE), { id: 'mem-3', owner, content: 'a guess' }, { ...hashed('b'), actor: other }))
      .then(({ result }) => expect(result).toEqual({ id: 'mem-3', version: 1, status: 'active' }));
    // Nor without a key: a commandId slot is the principal's too.
    spec.given(history([write(T0, {}, { commandId: 'cmd-shared' })]))
      .when(write(after(T0, MINUTE), { id: 'mem-2', owner }, { commandId: 'cmd-shared', actor: other }))
      .then(({ result }) => expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' }));
    // Both principals' slots live side by side; the first writer's retry still gets its own result.
    spec.given(history([write(T0, {}, hashed('a')), write(after(T0, MINUTE), { id: 'mem-2', owner }, { ...hashed('a'), actor: other })]))
      .when(write(after(T0, 2 * MINUTE), { id: 'mem-9' }, hashed('a')))
      .then(({ events, result }) => {
        expect(events).toEqual([]);
        expect(result).toEqual({ id: 'mem-1', version: 1, status: 'active' });
      });
  });

  it('builds a slot from its parts injectively: principal and agent ids holding \':\' never run into each other', () => {
    const slot = (principalId: string, agentId: string, idempotencyKey: string) =>
      idempotencySlot(write(T0, {}, { idempotencyKey, actor: { ...WRITER, principalId, agentId } }).metadata);
    const slots = [slot('p:a', 'g', 'k'), slot('p', 'a:g', 'k'), slot('p', 'a', 'g:k'), slot('p:a:g', 'x', 'k')];
    expect(new Set(slots).size).toBe(slots.length);
    // A caller's key is never a commandId's slot, whatever it is called.
    expect(idempotencySlot(write(T0, {}, { idempotencyKey: 'cmd-1' }).metadata)).not.toBe(idempotencySlot(write(T0, {}, { commandId: 'cmd-1' }).metadata));
  });

  it('keeps keys per agent: another agent\'s identical key is independent', () => {
    spec
      .given(history([first]))
      .when(write(after(T0, MINUTE), { id: 'mem-2' }, { idempotencyKey: 'key-1', actor: OTHER_AGENT }))
      .then(({ events, result }) => {
        expect(events).toMatchObject([{ type: 'MemoryWritten', data: { record: { id: 'mem-2', agentId: OTHER_AGENT.agentId } } }]);
        expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' });
      });
  });
});

describe('WriteMemory: TTL per kind (§5.7)', () => {
  const kinds: MemoryKind[] = ['working_note', 'fact', 'skill', 'preference'];

  it.each(kinds)('defaults expiresAt of a %s to the kind\'s default TTL', (kind) => {
    spec.given([]).when(write(T0, { kind })).then(({ events }) => {
      const expected = after(T0, DEFAULT_TTL_POLICY[kind].defaultSeconds * SECOND);
      expect(events).toMatchObject([{ type: 'MemoryWritten', data: { record: { kind, expiresAt: expected } } }]);
    });
  });

  it('keeps a requested expiresAt at exactly the kind\'s max TTL', () => {
    const max = after(T0, DEFAULT_TTL_POLICY.working_note.maxSeconds * SECOND);
    spec.given([]).when(write(T0, { kind: 'working_note', expiresAt: max })).then(({ events }) => {
      expect(events).toMatchObject([{ data: { record: { expiresAt: max } } }]);
    });
  });

  it('rejects an expiresAt beyond the kind\'s max TTL', () => {
    const tooLate = after(T0, DEFAULT_TTL_POLICY.working_note.maxSeconds * SECOND + SECOND);
    spec.given([]).when(write(T0, { kind: 'working_note', expiresAt: tooLate })).thenThrows('MEM_TTL_EXCEEDED');
  });

  it('rejects an expiresAt in the past or at the write time', () => {
    spec.given([]).when(write(T0, { expiresAt: after(T0, -MINUTE) })).thenThrows('MEM_VALIDATION');
    spec.given([]).when(write(T0, { expiresAt: T0 })).thenThrows('MEM_VALIDATION');
  });

  it('does not let an update stretch a memory past createdAt + the kind\'s max TTL (§2)', () => {
    const maxMs = DEFAULT_TTL_POLICY.working_note.maxSeconds * SECOND;
    const updatedAt = after(T0, 6 * DAY);
    spec
      .given(history([write(T0, { kind: 'working_note' })]))
      .when(write(updatedAt, { kind: 'working_note', expectedVersion: 1, expiresAt: after(T0, maxMs + DAY) }))
      .thenThrows('MEM_TTL_EXCEEDED');
  });
});

describe('WriteMemory: supersession (§5.8)', () => {
  const original = write(T0, { purposes: ['support', 'billing'] });
  const correction = (overrides: Parameters<typeof write>[1] = {}, meta: Parameters<typeof write>[2] = {}) =>
    write(T1, { id: 'mem-2', purposes: ['billing', 'support'], supersedesId: 'mem-1', content: 'Ada prefers chat.', ...overrides }, meta);

  it('supersedes an active target of the same agent and purposes in the same decision', () => {
    spec.given(history([original])).when(correction()).then(({ events, result }) => {
      expect(events).toMatchObject([
        { type: 'MemoryWritten', data: { record: { id: 'mem-2', status: 'active', supersedesId: 'mem-1' } } },
        { type: 'MemorySuperseded', data: { id: 'mem-1', version: 2, supersededById: 'mem-2' } },
      ]);
      expect(result).toEqual({ id: 'mem-2', version: 1, status: 'active' });
      const state = fold(events, stateOf(history([original])));
      expect(state.records['mem-1']?.meta).toMatchObject({ status: 'superseded', version: 2, supersededById: 'mem-2' });
    });
  });

  it('keeps the request fingerprint on the written event only: the superseded record\'s event has no envelope to seal it in (§8.5)', () => {
    const fingerprint = { idempotencyKey: 'key-c', requestHash: 'e'.repeat(64) };
    spec.given(history([original])).when(correction({}, fingerprint)).then(({ events }) => {
      expect(events.map((e) => [e.type, e.metadata.requestHash])).toEqual([['MemoryWritten', 'e'.repeat(64)], ['MemorySuperseded', undefined]]);
      expect(events[1]?.metadata).not.toHaveProperty('requestHash');
    });
  });

  it('rejects a correction by another agent', () => {
    spec.given(history([original])).when(correction({}, { actor: OTHER_AGENT })).thenThrows('MEM_SUPERSEDE_MISMATCH');
  });

  it('rejects a correction for other purposes', () => {
    spec.given(history([original])).when(correction({ purposes: ['support'] })).thenThrows('MEM_SUPERSEDE_MISMATCH');
    spec.given(history([original])).when(correction({ purposes: ['support', 'billing', 'planning'] })).thenThrows('MEM_SUPERSEDE_MISMATCH');
  });

  it('rejects a correction of an unknown memory', () => {
    spec.given(history([original])).when(correction({ supersedesId: 'mem-unknown' })).thenThrows('MEM_NOT_FOUND');
  });

  it('rejects a correction of a memory that is already superseded', () => {
    const given = history([original, correction()]);
    const again = write(after(T1, MINUTE), { id: 'mem-3', purposes: ['support', 'billing'], supersedesId: 'mem-1' });
    spec.given(given).when(again).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('rejects a correction of an expired memory, whether or not the scheduler has run yet', () => {
    const expiresAt = after(T0, DAY);
    const due = history([write(T0, { purposes: ['support', 'billing'], expiresAt })]);
    const late = after(expiresAt, MINUTE);
    const lateCorrection = write(late, { id: 'mem-2', purposes: ['support', 'billing'], supersedesId: 'mem-1' });
    spec.given(due).when(lateCorrection).thenThrows('MEM_INVALID_TRANSITION');
    const expired = history([write(T0, { purposes: ['support', 'billing'], expiresAt }), expire(expiresAt)]);
    spec.given(expired).when(lateCorrection).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('rejects a memory superseding itself', () => {
    spec.given([]).when(write(T0, { supersedesId: 'mem-1' })).thenThrows('MEM_VALIDATION');
  });

  it('does not let an untrusted correction knock out the target until it is promoted', () => {
    const quarantined = history([original, correction({ trust: 'untrusted' })]);
    expect(quarantined.map((e) => e.type)).toEqual(['MemoryWritten', 'MemoryWritten']);
    expect(stateOf(quarantined).records['mem-1']?.meta.status).toBe('active');

    spec.given(quarantined).when(promote(after(T1, HOUR), { id: 'mem-2', expectedVersion: 1 })).then(({ events }) => {
      expect(events).toMatchObject([
        { type: 'MemoryPromoted', data: { id: 'mem-2', version: 2 } },
        { type: 'MemorySuperseded', data: { id: 'mem-1', version: 2, supersededById: 'mem-2' } },
      ]);
    });
  });

  it('keeps a pending supersession when the writer updates its quarantined correction', () => {
    const updated = history([
      original,
      correction({ trust: 'untrusted' }),
      write(after(T1, MINUTE), {
        id: 'mem-2', purposes: ['support', 'billing'], expectedVersion: 1, trust: 'untrusted', content: 'Ada prefers chat, not calls.',
      }),
    ]);
    spec.given(updated).when(promote(after(T1, HOUR), { id: 'mem-2', expectedVersion: 2 })).then(({ events }) => {
      expect(events.map((e) => e.type)).toEqual(['MemoryPromoted', 'MemorySuperseded']);
    });
  });
});

describe('WriteMemory: no resurrection (§5.9)', () => {
  const jobAt = after(T0, HOUR);
  const cases = [
    { status: 'revocation_pending', commands: [write(T0), deleteMemory(jobAt)], version: 2 },
    { status: 'tombstoned', commands: [write(T0), deleteMemory(jobAt), tombstone(jobAt)], version: 3 },
    { status: 'purged', commands: [write(T0), deleteMemory(jobAt), tombstone(jobAt), purge(jobAt)], version: 4 },
  ] as const;

  it.each(cases)('rejects a write on a $status id, even with its current version', ({ status, commands, version }) => {
    const given = spec.given(history([...commands]));
    expect(given.state.records['mem-1']?.meta).toMatchObject({ status, version });
    given.when(write(after(jobAt, MINUTE), { expectedVersion: version })).thenThrows('MEM_ID_TAKEN');
    given.when(write(after(jobAt, MINUTE), { expectedVersion: 0 })).thenThrows('MEM_ID_TAKEN');
  });
});
