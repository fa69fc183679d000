import { describe, expect, it } from 'vitest';
import { seededRandom } from '@gm/testing/seeded-random';
import { MAX_DOC_ID_BYTES, docIdOf, recordDocId } from './es-support.ts';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

// The characters that could make two lists meet: the join's separator, the escape, their escaped forms; and long runs.
const ALPHABET = ['/', '%', '%2F', '%25', ':', 'a', 'é', 'x'.repeat(60), '/'.repeat(40)];

describe('Elasticsearch document ids', () => {
  it('keeps the ids every document was indexed under for ordinary ids: a lookup or delete still finds them', () => {
    expect(recordDocId('acme', 'rec-1')).toBe('acme/rec-1');
    expect(docIdOf('acme', 't:acme/r:project:maple/v:team', 'cust-42', 'support')).toBe('acme/t:acme%2Fr:project:maple%2Fv:team/cust-42/support');
  });

  it('stays within the 512-byte _id limit with maximal legal ids, and gives one id per parts', () => {
    const tenant = `t${'n'.repeat(63)}`;
    const id = (tail: string) => `${'x'.repeat(127)}${tail}`;
    const partition = `t:${tenant}/r:workspace:${id('r')}/v:private/o:${id('o')}`;
    const summary = docIdOf(tenant, partition, id('s'), 'p'.repeat(64));
    expect(bytes(summary)).toBeLessThanOrEqual(MAX_DOC_ID_BYTES);
    expect(summary).toBe(docIdOf(tenant, partition, id('s'), 'p'.repeat(64)));
    expect(summary).not.toBe(docIdOf(tenant, partition, id('t'), 'p'.repeat(64)));
    expect(bytes(recordDocId(tenant, id('r')))).toBeLessThanOrEqual(MAX_DOC_ID_BYTES);
    // Bounded whatever the parts hold, multi-byte characters included.
    expect(bytes(docIdOf('é'.repeat(400), 'ü'.repeat(400)))).toBeLessThanOrEqual(MAX_DOC_ID_BYTES);
  });

  it('is injective: 50,000 adversarial part lists, short and long, every distinct list a distinct id within the limit', () => {
    const next = seededRandom(20261207);
    const seen = new Map<string, string>();
    for (let i = 0; i < 50_000; i += 1) {
      const count = 2 + Math.floor(next() * 3);
      const list = Array.from({ length: count }, () => Array.from({ length: Math.floor(next() * 6) }, () => ALPHABET[Math.floor(next() * ALPHABET.length)]).join(''));
      const [first = '', second = '', ...rest] = list;
      const id = docIdOf(first, second, ...rest);
      expect(bytes(id)).toBeLessThanOrEqual(MAX_DOC_ID_BYTES);
      const parts = JSON.stringify(list);
      const earlier = seen.get(id);
      if (earlier !== undefined) expect(earlier, `${earlier} and ${parts} share ${id}`).toBe(parts);
      seen.set(id, parts);
    }
    // Both forms were exercised.
    expect([...seen.keys()].some((id) => id.startsWith('sha256-'))).toBe(true);
    expect([...seen.keys()].some((id) => id.includes('/'))).toBe(true);
  });
});
