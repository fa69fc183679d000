/**
 * How long a lingering partition waits before its next batch (SubscriptionSettings.lingerMs
 * and lingerShare): at least `lingerMs` after its last batch, and long enough that the group's
 * handling — `busyMs`, the last batch of every partition it owns, added up — is at most `share`
 * of the time. Pure, so the rule is tested without a clock.
 */
export function lingerDelayMs(options: { lingerMs: number; share: number; busyMs: number; sinceLastMs: number }): number {
  const { lingerMs, share, busyMs, sinceLastMs } = options;
  const idleNeeded = share >= 1 ? 0 : busyMs * (1 / share - 1);
  return Math.max(0, Math.max(lingerMs, idleNeeded) - sinceLastMs);
}
