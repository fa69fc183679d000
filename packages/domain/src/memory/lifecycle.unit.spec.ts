import { describe, expect, it } from 'vitest';
import type { MemoryCommand, RecordStatus } from '@gm/contracts';
import { deciderSpec } from '@gm/testing/decider-spec';
import { decide } from './decide.ts';
import { evolve, fold } from './evolve.ts';
import { CTX, DAY, HOUR, MINUTE, T0, after, deleteMemory, expire, history, purge, tombstone, write } from './fixtures.ts';
import { initialState, type SubjectState } from './state.ts';

const spec = deciderSpec({ decide: (c: MemoryCommand, s: SubjectState) => decide(c, s, CTX), evolve, initialState });
const expiresAt = after(T0, DAY);
const written = [write(T0, { expiresAt })];

describe('ExpireMemory (§3, expiry-scheduler)', () => {
  it('refuses to expire a memory before it is due', () => {
    spec.given(history(written)).when(expire(after(expiresAt, -MINUTE))).thenThrows('MEM_INVALID_TRANSITION');
  });

  it('expires an active memory once expiresAt is reached', () => {
    const given = spec.given(history(written));
    given.when(expire(expiresAt)).then(({ events, result }) => {
      expect(events).toMatchObject([{ type: 'MemoryExpired', data: { id: 'mem-1', version: 2 } }]);
      expect(result).toEqual({ id: 'mem-1', version: 2, status: 'expired' });
      expect(fold(events, given.state).records['mem-1']?.meta).toMatchObject({ status: 'expired', version: 2 });
    });
  });

  it('expires a quarantined memory that nobody reviewed in time', () => {
    spec.given(history([write(T0, { expiresAt, trust: 'untrusted' })])).when(expire(after(expiresAt, HOUR))).then(({ events }) => {
      expect(events).toMatchObject([{ type: 'MemoryExpired', data: { id: 'mem-1', version: 2 } }]);
    });
  });

  const late = after(expiresAt, HOUR);
  const stale: Array<{ status: RecordStatus; commands: MemoryCommand[]; version: number }> = [
    { status: 'superseded', commands: [...written, write(after(T0, HOUR), { id: 'mem-2', supersedesId: 'mem-1' })], version: 2 },
    { status: 'expired', commands: [...written, expire(expiresAt)], version: 2 },
    { status: 'revocation_pending', commands: [...written, deleteMemory(after(T0, HOUR))], version: 2 },
    { status: 'tombstoned', commands: [...written, deleteMemory(after(T0, HOUR)), tombstone(after(T0, HOUR))], version: 3 },
    {
      status: 'purged',
      commands: [...written, deleteMemory(after(T0, HOUR)), tombstone(after(T0, HOUR)), purge(after(T0, HOUR))],
      version: 4,
    },
  ];

  it.each(stale)('treats a stale schedule for a $status memory as a quiet no-op', ({ status, commands, version }) => {
    const given = spec.given(history(commands));
    expect(given.state.records['mem-1']?.meta).toMatchObject({ status, version });
    given.when(expire(late)).then(({ events, result }) => {
      expect(events).toEqual([]);
      expect(result).toEqual({ id: 'mem-1', version, status });
    });
  });
});
