import type { SharedClock } from '@gm/time';

/**
 * A clock moved by hand whose milliseconds live in shared memory, so another thread of this
 * process reads the same time (@gm/time's `clockOnShared`): tests move the embedded runtime's
 * clock, and its pipeline thread follows at once.
 */
export class ManualClock implements SharedClock {
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
