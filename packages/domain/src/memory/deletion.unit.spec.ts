import { describe, expect, it } from 'vitest';
import { ERASED_CONTENT_HASH, type EventOf, type MemoryCommand, type MemoryEvent } from '@gm/contracts';
import { deciderSpec } from '@gm/testing/decider-spec';
import { decide } from './decide.ts';
import { evolve, fold } from './evolve.ts';
import {
  CONTENT_HASH, CTX, DAY, HOUR, MINUTE, T0, TENANT, after, deleteMemory, expire, forget, history, purge, reject, revoke, stateOf, tombstone,
  write,
} from './fixtures.ts';
import { recordPartition } from '../partition.ts';
import { initialState, type SubjectState } from './state.ts';

const spec = deciderSpec({ decide: (c: MemoryCommand, s: SubjectState) => decide(c, s, CTX), evolve, initialState });
const T1 = after(T0, HOUR);
const T2 = after(T1, HOUR);
const active = [write(T0)];

const forgotten = (events: MemoryEvent[]): EventOf<'SubjectForgotten'> => {
  const [only, ...rest] = events;
  expect(rest).toEqual([]);
  expect(only?.type).toBe('SubjectForgotten');
  if (only?.type !== 'SubjectForgotten') throw new Error('expected exactly one SubjectForgotten');
  return only;
};

describe('RevokeMemory / DeleteMemory (§3, §7)', () => {
  it('requests revocation of an active memory: mode "revoke", the job id, version +1', () => {
    spec.given(history(active)).when(revoke(T1, { jobId: 'job-r' })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryRevocationRequested', data: { id: 'mem-1', version: 2, jobId: 'job-r', mode: 'revoke' } }]);
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'revocation_pending', jobId: 'job-r' });
    });
  });

  it('requests deletion of an active memory: mode "delete"; the read path denies from here on', () => {
    const given = spec.given(history(active));
    given.when(deleteMemory(T1, { jobId: 'job-d' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryRevocationRequested', data: { id: 'mem-1', version: 2, jobId: 'job-d', mode: 'delete' } }]);
      expect(fold(events, given.state).records['mem-1']).toMatchObject({
        meta: { status: 'revocation_pending', version: 2 },
        deletion: { jobId: 'job-d', reason: 'deleted' },
      });
    });
  });

  it.each([
    { status: 'quarantined', commands: [write(T0, { trust: 'untrusted' })], version: 1 },
    { status: 'superseded', commands: [write(T0), write(after(T0, MINUTE), { id: 'mem-2', supersedesId: 'mem-1' })], version: 2 },
    { status: 'expired', commands: [write(T0, { expiresAt: after(T0, DAY) }), expire(after(T0, DAY))], version: 2 },
  ])('deletes a $status memory too (any live record)', ({ commands, version }) => {
    spec.given(history(commands)).when(deleteMemory(T2)).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryRevocationRequested', data: { id: 'mem-1', version: version + 1, mode: 'delete' } }]);
    });
  });

  it('answers a second deletion with the first job id and changes nothing', () => {
    const given = spec.given(history([...active, deleteMemory(T1, { jobId: 'job-first' })]));
    given.when(deleteMemory(T2, { jobId: 'job-second' })).then(({ events, result }) => {
      expect(events).toEqual([]);
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'revocation_pending', jobId: 'job-first' });
    });
  });

  it('refuses, retriably, a deletion while a revocation is still in progress (it would end as "retained")', () => {
    spec.given(history([...active, revoke(T1, { jobId: 'job-revoke' })])).when(deleteMemory(T2, { jobId: 'job-delete' })).thenThrows('MEM_CONFLICT');
  });

  it('answers a second deletion while the first is in progress with the first job', () => {
    const given = spec.given(history([...active, deleteMemory(T1, { jobId: 'job-first' })]));
    given.when(deleteMemory(T2, { jobId: 'job-second' })).then(({ events, result }) => {
      expect(events).toEqual([]);
      expect(result.jobId).toBe('job-first');
    });
  });
});

describe('ForgetSubject (§3, right to be forgotten)', () => {
  // One subject holding a record in every status.
  const everyStatus = history([
    write(T0, { id: 'mem-active' }),
    write(T0, { id: 'mem-quarantined', trust: 'untrusted' }),
    write(T0, { id: 'mem-old' }),
    write(after(T0, MINUTE), { id: 'mem-new', supersedesId: 'mem-old' }),
    write(T0, { id: 'mem-expired', expiresAt: after(T0, HOUR) }),
    expire(after(T0, HOUR), { id: 'mem-expired' }),
    write(T0, { id: 'mem-pending' }),
    deleteMemory(T1, { id: 'mem-pending', jobId: 'job-pending' }),
    write(T0, { id: 'mem-tombstoned' }),
    deleteMemory(T1, { id: 'mem-tombstoned', jobId: 'job-t' }),
    tombstone(T1, { id: 'mem-tombstoned', jobId: 'job-t' }),
    write(T0, { id: 'mem-purged' }),
    deleteMemory(T1, { id: 'mem-purged', jobId: 'job-p' }),
    tombstone(T1, { id: 'mem-purged', jobId: 'job-p' }),
    purge(T1, { id: 'mem-purged', jobId: 'job-p' }),
  ]);

  it('emits exactly one SubjectForgotten listing every live record at version +1, every tombstoned one whose content is still kept, and no purged one', () => {
    const given = spec.given(everyStatus);
    expect(given.state.records['mem-old']?.meta.status).toBe('superseded');
    expect(given.state.records['mem-expired']?.meta.status).toBe('expired');
    given.when(forget(T2, { jobId: 'job-forget' })).then(({ events, result }) => {
      const event = forgotten(events);
      expect(event.data.jobId).toBe('job-forget');
      expect(event.data.records).toEqual([
        { id: 'mem-active', version: 2 },
        { id: 'mem-expired', version: 3 },
        { id: 'mem-new', version: 2 },
        { id: 'mem-old', version: 3 },
        { id: 'mem-quarantined', version: 2 },
        // Tombstoned, not purged (its job runs, or a legal hold kept it): the forget takes it in.
        { id: 'mem-tombstoned', version: 4, alreadyTombstoned: true },
      ]);
      expect(result).toEqual({ jobId: 'job-forget' });
    });
  });

  it('leaves every forgotten record revocation_pending under the forget job', () => {
    const given = spec.given(everyStatus);
    given.when(forget(T2, { jobId: 'job-forget' })).then(({ events }) => {
      const state = fold(events, given.state);
      for (const { id, version, alreadyTombstoned } of forgotten(events).data.records) {
        expect(state.records[id]).toMatchObject({
          meta: { status: alreadyTombstoned ? 'tombstoned' : 'revocation_pending', version },
          deletion: { jobId: 'job-forget', reason: 'forgotten' },
        });
      }
      expect(state.records['mem-pending']?.deletion?.jobId).toBe('job-pending');
      expect(state.records['mem-purged']?.meta.status).toBe('purged');
    });
  });

  it('emits one event with an empty list for a subject with no records (no existence oracle)', () => {
    spec.given([]).when(forget(T0, { jobId: 'job-empty' })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'SubjectForgotten', data: { jobId: 'job-empty', records: [] } }]);
      expect(result).toEqual({ jobId: 'job-empty' });
    });
  });

  it('refuses to bring a forgotten id back, with the write path\'s one answer for an id not available', () => {
    const given = history([...active, forget(T1)]);
    spec.given(given).when(write(T2, { expectedVersion: 2 })).thenThrows('MEM_ID_TAKEN');
  });

  describe('by right (§8.1): only what the requester may delete', () => {
    const apollo = { kind: 'project', id: 'apollo' } as const;
    const hermes = { kind: 'project', id: 'hermes' } as const;
    const spread = history([
      write(T0, { id: 'mem-apollo-team', resource: apollo, visibility: 'team' }),
      write(T0, { id: 'mem-apollo-private', resource: apollo, visibility: 'private' }),
      write(T0, { id: 'mem-hermes-team', resource: hermes, visibility: 'team' }),
    ]);
    const teamOf = (resource: typeof apollo | typeof hermes) =>
      recordPartition({ tenantId: TENANT, resource, visibility: 'team', sensitivity: 'normal', owner: { principalId: '', kind: 'person' } });

    it('takes only the records in the partitions the edge opened to the requester', () => {
      spec.given(spread).when(forget(T1, { within: { kind: 'partitions', partitions: [teamOf(apollo)] } })).then(({ events }) => {
        expect(forgotten(events).data.records.map((r) => r.id)).toEqual(['mem-apollo-team']);
      });
    });

    it('takes nothing — and answers the same as for an unknown subject — when no partition is open to the requester', () => {
      spec.given(spread).when(forget(T1, { jobId: 'job-none', within: { kind: 'partitions', partitions: [] } })).then(({ events, result }) => {
        expect(forgotten(events).data.records).toEqual([]);
        expect(result).toEqual({ jobId: 'job-none' });
      });
    });

    it('takes every record of the subject for a privacy officer (the tenant)', () => {
      spec.given(spread).when(forget(T1, { within: { kind: 'tenant' } })).then(({ events }) => {
        expect(forgotten(events).data.records.map((r) => r.id)).toEqual(['mem-apollo-private', 'mem-apollo-team', 'mem-hermes-team']);
      });
    });
  });
});

describe('TombstoneMemory / PurgeMemory (§8.2, deletion-orchestrator)', () => {
  const deleting = [...active, deleteMemory(T1, { jobId: 'job-1' })];
  const tombstoned = [...deleting, tombstone(T1, { jobId: 'job-1' })];

  it('tombstones a memory pending revocation, keeping the reason of its job', () => {
    spec.given(history(deleting)).when(tombstone(T2, { jobId: 'job-1' })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryTombstoned', data: { id: 'mem-1', version: 3, jobId: 'job-1', reason: 'deleted' } }]);
      expect(result).toEqual({ id: 'mem-1', version: 3, status: 'tombstoned' });
    });
    spec.given(history([...active, revoke(T1, { jobId: 'job-1' })])).when(tombstone(T2, { jobId: 'job-1' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryTombstoned', data: { reason: 'revoked' } }]);
    });
    spec.given(history([...active, forget(T1, { jobId: 'job-f' })])).when(tombstone(T2, { jobId: 'job-f' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryTombstoned', data: { reason: 'forgotten' } }]);
    });
  });

  it('tombstones only from revocation_pending', () => {
    spec.given(history(active)).when(tombstone(T1)).thenThrows('MEM_INVALID_TRANSITION');
    spec.given(history([write(T0, { trust: 'untrusted' })])).when(tombstone(T1)).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('treats a repeated tombstone as done', () => {
    spec.given(history(tombstoned)).when(tombstone(T2)).then(({ events, result }) => {
      expect(events).toEqual([]);
      expect(result).toEqual({ id: 'mem-1', version: 3, status: 'tombstoned' });
    });
  });

  it('purges a tombstoned memory', () => {
    spec.given(history(tombstoned)).when(purge(T2, { jobId: 'job-1' })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryPurged', data: { id: 'mem-1', version: 4, jobId: 'job-1' } }]);
      expect(result).toEqual({ id: 'mem-1', version: 4, status: 'purged' });
    });
  });

  it('drops the content hash from the purged record\'s state: the hash goes with the content', () => {
    const purged = stateOf(history([...tombstoned, purge(T2, { jobId: 'job-1' })]));
    expect(purged.records['mem-1']?.meta).toMatchObject({ status: 'purged', contentHash: ERASED_CONTENT_HASH });
    expect(JSON.stringify(purged)).not.toContain(CONTENT_HASH);
  });

  it('purges only from tombstoned', () => {
    spec.given(history(active)).when(purge(T2)).thenThrows('MEM_INVALID_TRANSITION');
    spec.given(history(deleting)).when(purge(T2)).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('keeps a revoked memory for audit: it is never purged', () => {
    const revoked = [...active, revoke(T1, { jobId: 'job-1' }), tombstone(T1, { jobId: 'job-1' })];
    spec.given(history(revoked)).when(purge(T2)).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('purges a memory a reviewer rejected', () => {
    const rejected = history([write(T0, { trust: 'untrusted' }), reject(T1, { expectedVersion: 1 })]);
    expect(stateOf(rejected).records['mem-1']?.meta.status).toBe('tombstoned');
    spec.given(rejected).when(purge(T2, { jobId: 'job-gc' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryPurged', data: { id: 'mem-1', version: 3 } }]);
    });
  });

  it('treats a repeated purge as done', () => {
    spec.given(history([...tombstoned, purge(T1, { jobId: 'job-1' })])).when(purge(T2, { jobId: 'job-1' })).then(({ events, result }) => {
      expect(events).toEqual([]);
      expect(result).toEqual({ id: 'mem-1', version: 4, status: 'purged' });
    });
  });
});

describe('forgetting overrides an earlier revocation\'s audit retention (right to be forgotten)', () => {
  const T3 = after(T2, HOUR);
  const revoked = [...active, revoke(T1, { jobId: 'job-r' }), tombstone(T1, { jobId: 'job-r' })];

  it('forget includes a revoked record (tombstoned, content retained) and marks it already tombstoned', () => {
    const given = spec.given(history(revoked));
    expect(given.state.records['mem-1']?.meta.status).toBe('tombstoned');
    given.when(forget(T2, { jobId: 'job-f' })).then(({ events }) => {
      const event = forgotten(events);
      expect(event.data.records).toEqual([{ id: 'mem-1', version: 4, alreadyTombstoned: true }]);
      expect(fold(events, given.state).records['mem-1']).toMatchObject({
        meta: { status: 'tombstoned', version: 4 },
        deletion: { jobId: 'job-f', reason: 'forgotten' },
      });
    });
  });

  it('lets the forget job purge what the revocation retained', () => {
    spec.given(history([...revoked, forget(T2, { jobId: 'job-f' })])).when(purge(T3, { jobId: 'job-f' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryPurged', data: { id: 'mem-1', version: 5, jobId: 'job-f' } }]);
    });
  });

  it('lets a delete of a revoked record purge it too, and still refuses to purge under the revocation alone', () => {
    spec.given(history(revoked)).when(purge(T2, { jobId: 'job-r' })).thenThrows('MEM_INVALID_TRANSITION');
    const given = spec.given(history([...revoked, deleteMemory(T2, { jobId: 'job-d' })]));
    expect(given.state.records['mem-1']).toMatchObject({ meta: { status: 'tombstoned', version: 4 }, deletion: { reason: 'deleted' } });
    given.when(purge(T3, { jobId: 'job-d' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryPurged', data: { id: 'mem-1', version: 5 } }]);
    });
  });

  it('ignores a duplicate (stale) event when folding: the purged record stays purged', () => {
    const events = history([...revoked, forget(T2, { jobId: 'job-f' }), purge(T3, { jobId: 'job-f' })]);
    const requested = events.find((e) => e.type === 'MemoryRevocationRequested');
    if (!requested) throw new Error('no revocation event');
    expect(evolve(stateOf(events), requested).records['mem-1']?.meta).toMatchObject({ status: 'purged', version: 5 });
  });
});
