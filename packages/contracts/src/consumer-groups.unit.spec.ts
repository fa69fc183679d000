import { describe, expect, it } from 'vitest';
import { CONSUMER_GROUPS } from './consumer-groups.ts';

describe('consumer groups', () => {
  it('gives every consumer a name of its own: two sharing one would split its partitions between them', () => {
    const names = Object.values(CONSUMER_GROUPS);
    expect(new Set(names).size).toBe(names.length);
  });
});
