import { describe, expect, it } from 'vitest';
import { derivedId } from './derived.ts';

describe('derivedId', () => {
  it('is the same for the same parts and an id of the Id schema\'s alphabet and length', () => {
    const id = derivedId('tomb', '01JOB', 'record-1');
    expect(derivedId('tomb', '01JOB', 'record-1')).toBe(id);
    expect(id).toMatch(/^tomb\.[0-9a-f]{64}$/);
  });

  it('keeps apart long ids that share their first 128 characters, which cutting to length did not', () => {
    const long = 'r'.repeat(120);
    const a = derivedId('tomb', '01JOB', `${long}-a`);
    const b = derivedId('tomb', '01JOB', `${long}-b`);
    expect(a).not.toBe(b);
    expect(`tomb.01JOB.${long}-a`.slice(0, 128)).toBe(`tomb.01JOB.${long}-b`.slice(0, 128));
  });

  it('keeps apart parts that join to the same text', () => {
    expect(derivedId('expire', 'a.b', 'c')).not.toBe(derivedId('expire', 'a', 'b.c'));
  });
});
