import { describe, expect, it } from 'vitest';
import { formatOffset, formatTime } from './format.ts';

describe('times on the console', () => {
  it('shows an instant in UTC to the second, whatever the zone it was written in', () => {
    expect(formatTime('2026-12-06T01:02:03.456Z')).toBe('2026-12-06 01:02:03 UTC');
    expect(formatTime('2026-12-06T03:02:03+02:00')).toBe('2026-12-06 01:02:03 UTC');
    expect(formatTime(undefined)).toBe('—');
    expect(formatTime('not a time')).toBe('not a time');
  });

  it('says how long after the start a step came', () => {
    expect(formatOffset(0)).toBe('+0 s');
    expect(formatOffset(412)).toBe('+0.4 s');
    expect(formatOffset(12_340)).toBe('+12.3 s');
    expect(formatOffset(125_000)).toBe('+2 min 5 s');
    expect(formatOffset(3 * 3_600_000 + 4 * 60_000)).toBe('+3 h 4 min');
    expect(formatOffset(-1_500)).toBe('−1.5 s');
  });
});
