import { describe, expect, it } from 'vitest';
import { exactPhrase, paraphrase } from './capture.ts';

describe('verification probes built from content', () => {
  const content = 'Customer 42 said that the Heron Logistics gate code 5521 opens the east warehouse.';

  it('takes the run of six consecutive words that carries the most distinctive terms, verbatim', () => {
    const phrase = exactPhrase(content);
    expect(phrase.split(' ')).toHaveLength(6);
    expect(content).toContain(phrase);
    expect(phrase).toContain('5521');
  });

  it('keeps short content whole', () => {
    expect(exactPhrase('Dunlin lockbox code')).toBe('Dunlin lockbox code');
  });

  it('paraphrases with the four most distinctive terms, not in the content\'s order, without stopwords', () => {
    const terms = paraphrase(content).split(' ');
    expect(terms).toHaveLength(4);
    expect(terms).toEqual(expect.arrayContaining(['logistics', 'warehouse', '5521']));
    expect(terms).not.toContain('the');
    expect(content.toLowerCase()).not.toContain(terms.join(' '));
  });

  it('is deterministic', () => {
    expect(paraphrase(content)).toBe(paraphrase(content));
    expect(exactPhrase(content)).toBe(exactPhrase(content));
  });
});
