import { GovernedMemoryError, type MemoryKind } from '@gm/contracts';

/** Seconds. Every kind has a default and a maximum lifetime (design §2). */
export type TtlPolicy = Record<MemoryKind, { defaultSeconds: number; maxSeconds: number }>;

export const DEFAULT_TTL_POLICY: TtlPolicy = {
  working_note: { defaultSeconds: 24 * 3600, maxSeconds: 7 * 24 * 3600 },
  fact: { defaultSeconds: 90 * 24 * 3600, maxSeconds: 365 * 24 * 3600 },
  skill: { defaultSeconds: 180 * 24 * 3600, maxSeconds: 730 * 24 * 3600 },
  preference: { defaultSeconds: 30 * 24 * 3600, maxSeconds: 180 * 24 * 3600 },
};

/**
 * expiresAt for a write at `now`: the kind's default when absent; never past createdAt plus
 * the kind's max (§2) — an update of an old record cannot extend its life beyond that.
 */
export function resolveExpiry(
  kind: MemoryKind, now: string, requested: string | undefined, policy: TtlPolicy, createdAt: string = now,
): string {
  const nowMs = Date.parse(now);
  const { defaultSeconds, maxSeconds } = policy[kind];
  const capMs = Date.parse(createdAt) + maxSeconds * 1000;
  if (requested === undefined) return new Date(Math.min(nowMs + defaultSeconds * 1000, capMs)).toISOString();
  const at = Date.parse(requested);
  if (at <= nowMs) throw new GovernedMemoryError('MEM_VALIDATION', 'expiresAt must be in the future');
  if (at > capMs) {
    throw new GovernedMemoryError('MEM_TTL_EXCEEDED', `expiresAt exceeds the maximum TTL of ${kind} (${maxSeconds} s)`);
  }
  return new Date(at).toISOString();
}
