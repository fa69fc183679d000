import { describe, expect, it } from 'vitest';
import type { MemoryCommand } from '@gm/contracts';
import { deciderSpec } from '@gm/testing/decider-spec';
import { decide } from './decide.ts';
import { evolve, fold } from './evolve.ts';
import {
  CONTENT, CTX, DAY, HOUR, MINUTE, OTHER_AGENT, REVIEWER, T0, WRITER,
  after, deleteMemory, history, promote, reject, write,
} from './fixtures.ts';
import { initialState, type SubjectState } from './state.ts';

const spec = deciderSpec({ decide: (c: MemoryCommand, s: SubjectState) => decide(c, s, CTX), evolve, initialState });
const T1 = after(T0, HOUR);
const quarantined = history([write(T0, { trust: 'untrusted' })]);
const active = history([write(T0, { trust: 'trusted', visibility: 'private' })]);

describe('PromoteMemory (§3)', () => {
  it('moves a quarantined memory to active and verified, handing its content over in the event', () => {
    const given = spec.given(quarantined);
    given.when(promote(T1, { expectedVersion: 1 })).then(({ events, result }) => {
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        type: 'MemoryPromoted',
        data: {
          id: 'mem-1', version: 2, trust: 'verified', visibility: 'private', content: CONTENT,
          record: { status: 'active', trust: 'verified', version: 2, agentId: WRITER.agentId },
        },
      });
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'active' });

      const promoted = fold(events, given.state).records['mem-1'];
      expect(promoted?.meta).toMatchObject({ status: 'active', trust: 'verified', version: 2 });
      expect(promoted?.pendingContent).toBeUndefined();
    });
  });

  it('keeps a quarantined memory\'s content only until it leaves quarantine', () => {
    expect(spec.given(quarantined).state.records['mem-1']?.pendingContent).toBe(CONTENT);
    expect(spec.given(active).state.records['mem-1']?.pendingContent).toBeUndefined();
  });

  it('never lets the writer agent promote its own memory', () => {
    spec.given(quarantined).when(promote(T1, { expectedVersion: 1 }, { actor: WRITER })).thenThrows('MEM_SELF_PROMOTION');
  });

  it('never lets a principal named like the writer agent promote it', () => {
    const writerAsPrincipal = { ...REVIEWER, principalId: WRITER.agentId, principalKind: 'agent' as const };
    spec.given(quarantined).when(promote(T1, { expectedVersion: 1 }, { actor: writerAsPrincipal })).thenThrows('MEM_SELF_PROMOTION');
  });

  it('lets another agent of the same person promote: the rule is about the writer agent', () => {
    spec.given(quarantined).when(promote(T1, { expectedVersion: 1 }, { actor: OTHER_AGENT })).then(({ result }) => {
      expect(result.status).toBe('active');
    });
  });

  it('rejects a promotion with a stale version', () => {
    const updated = history([write(T0, { trust: 'untrusted' }), write(after(T0, MINUTE), { trust: 'untrusted', expectedVersion: 1 })]);
    spec.given(updated).when(promote(T1, { expectedVersion: 1 })).thenThrows('MEM_CONFLICT');
  });

  it('does not promote an active memory without widening it', () => {
    spec.given(active).when(promote(T1, { expectedVersion: 1 })).thenThrows('MEM_INVALID_TRANSITION');
    spec.given(active).when(promote(T1, { expectedVersion: 1, visibility: 'private' })).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('widens an active memory\'s visibility through a reviewed promotion', () => {
    spec.given(active).when(promote(T1, { expectedVersion: 1, visibility: 'team' })).then(({ events, result }) => {
      expect(events).toMatchObject([
        { type: 'MemoryPromoted', data: { id: 'mem-1', version: 2, visibility: 'team', record: { visibility: 'team', status: 'active' } } },
      ]);
      expect(events[0]?.data).not.toHaveProperty('content');
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'active' });
    });
  });

  it('does not promote a memory whose expiresAt has passed', () => {
    const expiresAt = after(T0, DAY);
    const given = history([write(T0, { trust: 'untrusted', expiresAt })]);
    spec.given(given).when(promote(expiresAt, { expectedVersion: 1 })).thenThrows('MEM_INVALID_TRANSITION');
    spec.given(given).when(promote(after(expiresAt, MINUTE), { expectedVersion: 1 })).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('answers a promotion of a memory being deleted as if it did not exist', () => {
    const deleting = history([write(T0, { trust: 'untrusted' }), deleteMemory(T1)]);
    spec.given(deleting).when(promote(after(T1, MINUTE), { expectedVersion: 2 })).thenThrows('MEM_NOT_FOUND');
    spec.given([]).when(promote(T1, { expectedVersion: 1 })).thenThrows('MEM_NOT_FOUND');
  });
});

describe('RejectQuarantined (§3)', () => {
  it('tombstones a quarantined memory with reason "rejected"', () => {
    spec.given(quarantined).when(reject(T1, { expectedVersion: 1 })).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryTombstoned', data: { id: 'mem-1', version: 2, reason: 'rejected' } }]);
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'tombstoned' });
    });
  });

  it('carries the reviewer\'s reason code into the event, and none when none was given', () => {
    spec.given(quarantined).when(reject(T1, { expectedVersion: 1, reason: 'injected-instruction' })).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryTombstoned', data: { reason: 'rejected', rejectionReason: 'injected-instruction' } }]);
    });
    spec.given(quarantined).when(reject(T1, { expectedVersion: 1 })).then(({ events }) => {
      expect(events[0]?.data).not.toHaveProperty('rejectionReason');
    });
  });

  it('never lets the writer agent reject (and so judge) its own memory', () => {
    spec.given(quarantined).when(reject(T1, { expectedVersion: 1 }, { actor: WRITER })).thenThrows('MEM_SELF_PROMOTION');
  });

  it('rejects only quarantined memories, at their current version', () => {
    spec.given(active).when(reject(T1, { expectedVersion: 1 })).thenThrows('MEM_INVALID_TRANSITION');
    spec.given(quarantined).when(reject(T1, { expectedVersion: 0 })).thenThrows('MEM_CONFLICT');
  });
});
