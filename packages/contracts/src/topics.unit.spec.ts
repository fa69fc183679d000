import { describe, expect, it } from 'vitest';
import { INGEST_RESULTS_TOPIC_PREFIX, ingestResultsTopic } from './topics.ts';

/** Every string of up to `length` characters of the alphabet. */
const strings = (alphabet: string, length: number): string[] => {
  let level = [''];
  const all: string[] = [];
  for (let n = 1; n <= length; n += 1) {
    level = level.flatMap((s) => [...alphabet].map((c) => s + c));
    all.push(...level);
  }
  return all;
};

describe('ingestResultsTopic', () => {
  it('gives two tenants two topics that Kafka tells apart even with . read as _ (its metric-name collision rule), and legal names', () => {
    // Exhaustive over the characters that are escaped, the escape's own letter and one more, up to five long.
    const tenants = strings('ad._-', 5);
    const names = tenants.map(ingestResultsTopic);
    expect(new Set(names).size).toBe(tenants.length);
    expect(new Set(names.map((n) => n.replaceAll('.', '_'))).size).toBe(tenants.length);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('keeps a 64-character tenant within Kafka\'s 249 characters, with room for a namespace', () => {
    const longest = ingestResultsTopic('_'.repeat(64));
    expect(longest.length).toBe(INGEST_RESULTS_TOPIC_PREFIX.length + 128);
    expect(longest.length).toBeLessThanOrEqual(249 - 64);
  });
});
