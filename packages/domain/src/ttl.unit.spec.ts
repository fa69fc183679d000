import { describe, expect, it } from 'vitest';
import { GovernedMemoryError, type MemoryKind } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, resolveExpiry, type TtlPolicy } from './ttl.ts';

const NOW = '2025-03-01T09:00:00.000Z';
const SECOND = 1_000;
const plus = (ms: number): string => new Date(Date.parse(NOW) + ms).toISOString();
const kinds: MemoryKind[] = ['working_note', 'fact', 'skill', 'preference'];

const codeOf = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (e) {
    return e instanceof GovernedMemoryError ? e.code : `not a GovernedMemoryError: ${String(e)}`;
  }
  return undefined;
};

describe('resolveExpiry (§2, §5.7)', () => {
  it.each(kinds)('gives a %s without expiresAt the kind\'s default TTL', (kind) => {
    expect(resolveExpiry(kind, NOW, undefined, DEFAULT_TTL_POLICY)).toBe(plus(DEFAULT_TTL_POLICY[kind].defaultSeconds * SECOND));
  });

  it.each(kinds)('has a default within the max TTL for a %s', (kind) => {
    const { defaultSeconds, maxSeconds } = DEFAULT_TTL_POLICY[kind];
    expect(defaultSeconds).toBeGreaterThan(0);
    expect(defaultSeconds).toBeLessThanOrEqual(maxSeconds);
  });

  it('keeps a requested expiresAt up to exactly the max TTL', () => {
    const max = plus(DEFAULT_TTL_POLICY.fact.maxSeconds * SECOND);
    expect(resolveExpiry('fact', NOW, max, DEFAULT_TTL_POLICY)).toBe(max);
    expect(resolveExpiry('fact', NOW, plus(SECOND), DEFAULT_TTL_POLICY)).toBe(plus(SECOND));
  });

  it('normalises a requested expiresAt with an offset to UTC', () => {
    expect(resolveExpiry('fact', NOW, '2025-03-02T11:00:00+02:00', DEFAULT_TTL_POLICY)).toBe('2025-03-02T09:00:00.000Z');
  });

  it('rejects an expiresAt past the kind\'s max TTL with MEM_TTL_EXCEEDED', () => {
    const tooLate = plus(DEFAULT_TTL_POLICY.working_note.maxSeconds * SECOND + 1);
    expect(codeOf(() => resolveExpiry('working_note', NOW, tooLate, DEFAULT_TTL_POLICY))).toBe('MEM_TTL_EXCEEDED');
    // The same instant is fine for a kind that lives longer.
    expect(resolveExpiry('fact', NOW, tooLate, DEFAULT_TTL_POLICY)).toBe(tooLate);
  });

  it('rejects an expiresAt that is not in the future with MEM_VALIDATION', () => {
    expect(codeOf(() => resolveExpiry('fact', NOW, NOW, DEFAULT_TTL_POLICY))).toBe('MEM_VALIDATION');
    expect(codeOf(() => resolveExpiry('fact', NOW, plus(-SECOND), DEFAULT_TTL_POLICY))).toBe('MEM_VALIDATION');
  });

  it('follows the configured policy, not the defaults', () => {
    const policy: TtlPolicy = { ...DEFAULT_TTL_POLICY, skill: { defaultSeconds: 60, maxSeconds: 120 } };
    expect(resolveExpiry('skill', NOW, undefined, policy)).toBe(plus(60 * SECOND));
    expect(codeOf(() => resolveExpiry('skill', NOW, plus(121 * SECOND), policy))).toBe('MEM_TTL_EXCEEDED');
  });
});
