import { describe, expect, it } from 'vitest';
import { seededRandom } from '@gm/testing/seeded-random';
import { keyOf, partsOf } from './key-encoding.ts';

// Seeded: the same adversarial lists every run.
const rng = seededRandom;

// The characters that could make two lists meet: separators, the escape, NUL, their escaped forms.
const ALPHABET = [':', '/', '%', '\u0000', '3', 'A', '2', 'F', '5', '0', 'a', 'x', ':', '%3A', '%25', '.', '-', '@', 'é'];

function parts(next: () => number): string[] {
  const count = 1 + Math.floor(next() * 4);
  return Array.from({ length: count }, () => Array.from({ length: Math.floor(next() * 5) }, () => ALPHABET[Math.floor(next() * ALPHABET.length)]).join(''));
}

describe('keyOf, the one encoding of store keys', () => {
  it('is injective: 200,000 adversarial part lists, every distinct list a distinct key', () => {
    const next = rng(20261204);
    const seen = new Map<string, string>();
    for (let i = 0; i < 200_000; i += 1) {
      const list = parts(next);
      const key = keyOf(...list);
      const id = JSON.stringify(list);
      const earlier = seen.get(key);
      if (earlier !== undefined) expect(earlier, `${earlier} and ${id} share ${key}`).toBe(id);
      seen.set(key, id);
      expect(partsOf(key)).toEqual(list);
    }
  });

  it('keeps the review\'s collision apart: tenant "acme:x" record "y" is not tenant "acme" record "x:y"', () => {
    expect(keyOf('acme:x', 'y')).not.toBe(keyOf('acme', 'x:y'));
    expect(keyOf('a', '')).not.toBe(keyOf('a'));
    expect(keyOf('a/b', 'c')).not.toBe(keyOf('a', 'b/c'));
  });

  it('leaves ordinary ids as they were (existing keys keep their bytes) and refuses no parts', () => {
    expect(keyOf('acme', 'rec-1')).toBe('acme:rec-1');
    expect(keyOf('acme', '01M8ZE91H11A7QZGH5QZDGZ03Q', '3')).toBe('acme:01M8ZE91H11A7QZGH5QZDGZ03Q:3');
    expect(() => keyOf()).toThrow(RangeError);
  });
});
