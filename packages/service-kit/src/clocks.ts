import type { Clock } from '@gm/contracts';

export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock moved by hand whose milliseconds live in shared memory, so another thread of this
 * process reads the same time (`clockOnShared`): tests move the embedded runtime's clock, and
 * its pipeline thread follows at once.
 */
export class ManualClock implements Clock {
  readonly shared = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT);
  private readonly cell = new Float64Array(this.shared);

  constructor(ms: number) {
    this.ms = ms;
  }

  get ms(): number {
    return this.cell[0] ?? 0;
  }

  set ms(value: number) {
    this.cell[0] = value;
  }

  now = (): Date => new Date(this.ms);

  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The shared milliseconds of a clock that has them (a ManualClock), for another thread. */
export const sharedMsOf = (clock: Clock): SharedArrayBuffer | undefined => (clock instanceof ManualClock ? clock.shared : undefined);

/** Reads the time a ManualClock of another thread keeps. */
export function clockOnShared(shared: SharedArrayBuffer): Clock {
  const cell = new Float64Array(shared);
  return { now: () => new Date(cell[0] ?? 0) };
}
