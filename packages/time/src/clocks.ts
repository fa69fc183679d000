import type { Clock } from '@gm/contracts';

export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock whose milliseconds live in shared memory, so another thread of this process reads the
 * same time (`clockOnShared`): tests move the embedded runtime's clock (@gm/testing's
 * ManualClock), and its pipeline thread follows at once.
 */
export interface SharedClock extends Clock {
  readonly shared: SharedArrayBuffer;
}

/** The shared milliseconds of a clock that has them, for another thread. */
export const sharedMsOf = (clock: Clock): SharedArrayBuffer | undefined =>
  'shared' in clock && clock.shared instanceof SharedArrayBuffer ? clock.shared : undefined;

/** Reads the time a SharedClock of another thread keeps. */
export function clockOnShared(shared: SharedArrayBuffer): Clock {
  const cell = new Float64Array(shared);
  return { now: () => new Date(cell[0] ?? 0) };
}
