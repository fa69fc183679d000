import { decodeTime, isValid } from 'ulid';
import { describe, expect, it } from 'vitest';
import { newUlid } from './ulid.ts';

describe('newUlid', () => {
  it('makes valid ULIDs that carry the given time', () => {
    const at = Date.parse('2026-12-01T10:00:00.000Z');
    const id = newUlid(at);
    expect(isValid(id)).toBe(true);
    expect(decodeTime(id)).toBe(at);
  });

  it('never repeats across more ids than one draw of the random pool covers', () => {
    // 16 bytes per id: 10,000 ids span about 40 refills of the 4 KiB pool.
    const ids = Array.from({ length: 10_000 }, () => newUlid());
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every(isValid)).toBe(true);
  });

  it('uses every symbol of the alphabet in the random part', () => {
    const symbols = new Set(Array.from({ length: 200 }, () => newUlid().slice(10)).join(''));
    expect(symbols.size).toBe(32);
  });
});
