import { describe, expect, it } from 'vitest';
import { SUMMARY_LIMITS, buildSummaries, firstSentence, inSummaryOrder, summaryOfPurpose, type SummarySourceInput } from './extractive.ts';

const NOW = '2030-01-01T00:00:00.000Z';
const source = (recordId: string, content: string, overrides: Partial<SummarySourceInput> = {}): SummarySourceInput => ({
  recordId, version: 1, contentHash: `h-${recordId}`, content, kind: 'fact', purposes: ['support'], confidence: 0.5,
  createdAt: '2029-12-01T00:00:00.000Z', expiresAt: '2031-01-01T00:00:00.000Z', ...overrides,
});

describe('firstSentence', () => {
  it('takes the first sentence of the first non-empty line, whitespace collapsed', () => {
    expect(firstSentence('\n  Prefers   email. Calls are fine on Fridays.\nSecond line.')).toBe('Prefers email.');
    expect(firstSentence('No terminal punctuation here')).toBe('No terminal punctuation here');
    expect(firstSentence('Version 2.5 is installed. Upgrade soon.')).toBe('Version 2.5 is installed.');
  });

  it('cuts a long sentence at a word boundary', () => {
    const cut = firstSentence(`${'word '.repeat(100)}end.`, 40);
    expect(cut.length).toBeLessThanOrEqual(41);
    expect(cut.endsWith('word…')).toBe(true);
  });
});

describe('buildSummaries (deterministic, extractive)', () => {
  it('orders lines by confidence, then recency, then id, and lists exactly the sources used', () => {
    const [summary] = buildSummaries([
      source('low', 'Low confidence line.', { confidence: 0.2 }),
      source('old', 'Older line.', { confidence: 0.9, createdAt: '2029-01-01T00:00:00.000Z' }),
      source('new', 'Newer line.', { confidence: 0.9, createdAt: '2029-06-01T00:00:00.000Z' }),
    ], NOW);
    expect(summary?.text).toBe('Newer line.\nOlder line.\nLow confidence line.');
    expect(summary?.derivedFrom.map((d) => d.recordId)).toEqual(['low', 'new', 'old']);
  });

  it('gives the same summary whatever order the sources come in', () => {
    const sources = [source('a', 'Alpha.'), source('b', 'Bravo.', { confidence: 0.7 }), source('c', 'Charlie.')];
    expect(buildSummaries([...sources].reverse(), NOW)).toEqual(buildSummaries(sources, NOW));
  });

  it('builds one summary per purpose, each only from the sources that allow it', () => {
    const summaries = buildSummaries([
      source('both', 'Shared fact.', { purposes: ['support', 'billing'] }),
      source('support-only', 'Support fact.', { purposes: ['support'] }),
    ], NOW);
    expect(summaries.map((s) => [s.purpose, s.text])).toEqual([
      ['billing', 'Shared fact.'],
      ['support', 'Shared fact.\nSupport fact.'],
    ]);
  });

  it('summarises facts only, and leaves out sources already expired', () => {
    const summaries = buildSummaries([
      source('note', 'A working note.', { kind: 'working_note' }),
      source('expired', 'Expired fact.', { expiresAt: NOW }),
      source('fact', 'Live fact.', { expiresAt: '2030-06-01T00:00:00.000Z' }),
    ], NOW);
    expect(summaries).toEqual([
      { purpose: 'support', text: 'Live fact.', derivedFrom: [{ recordId: 'fact', version: 1, contentHash: 'h-fact' }], expiresAt: '2030-06-01T00:00:00.000Z' },
    ]);
  });

  it('expires with its earliest source', () => {
    const [summary] = buildSummaries([source('a', 'A.', { expiresAt: '2030-03-01T00:00:00.000Z' }), source('b', 'B.')], NOW);
    expect(summary?.expiresAt).toBe('2030-03-01T00:00:00.000Z');
  });

  it('keeps a repeated line once but derives it from every record that says it', () => {
    const [summary] = buildSummaries([source('a', 'Prefers email.'), source('b', 'prefers EMAIL.')], NOW);
    expect(summary?.text).toBe('Prefers email.');
    expect(summary?.derivedFrom.map((d) => d.recordId)).toEqual(['a', 'b']);
  });

  it('stays within its bounds: skipped sources are not listed as sources', () => {
    const many = Array.from({ length: 30 }, (_, i) => source(`r${String(i).padStart(2, '0')}`, `Fact number ${i}.`));
    const [summary] = buildSummaries(many, NOW);
    expect(summary?.derivedFrom).toHaveLength(SUMMARY_LIMITS.maxSources);
    const long = buildSummaries([source('a', 'x'.repeat(200)), source('b', 'y'.repeat(200))], NOW, { maxSources: 12, maxChars: 250, maxLineChars: 240 });
    expect(long[0]?.derivedFrom.map((d) => d.recordId)).toEqual(['a']);
    expect(long[0]?.text.length).toBeLessThanOrEqual(250);
  });

  it('says a summary is settled only once a new line comes after its last: what follows in the order cannot change it', () => {
    const ordered = inSummaryOrder(Array.from({ length: 14 }, (_, i) => source(`r${String(i).padStart(2, '0')}`, `Fact number ${i}.`)));
    // Twelve lines taken and nothing after them: a thirteenth source might still be a repeat of one.
    expect(summaryOfPurpose(ordered.slice(0, 12), 'support', NOW).settled).toBe(false);
    // A repeated line after the twelfth still joins; a new one settles it.
    const repeat = source('r99', 'Fact number 0.', { createdAt: '2029-11-30T00:00:00.000Z' });
    const withRepeat = summaryOfPurpose([...ordered.slice(0, 12), repeat], 'support', NOW);
    expect(withRepeat.settled).toBe(false);
    expect(withRepeat.summary?.derivedFrom).toHaveLength(13);
    const settled = summaryOfPurpose(ordered, 'support', NOW);
    expect(settled.settled).toBe(true);
    expect(settled.summary).toEqual(buildSummaries(ordered, NOW)[0]);
    // Sources of another purpose and lines that do not fit never settle it.
    expect(summaryOfPurpose(ordered, 'billing', NOW)).toEqual({ summary: undefined, settled: false });
  });

  it('orders sources by confidence as a 32-bit float, then newer, then id', () => {
    const ordered = inSummaryOrder([
      source('b', 'B.', { confidence: 0.7 }),
      source('a', 'A.', { confidence: 0.6999999999999999 }),
      source('c', 'C.', { confidence: 0.7, createdAt: '2029-12-02T00:00:00.000Z' }),
      source('d', 'D.', { confidence: 0.9 }),
    ]);
    expect(ordered.map((s) => s.recordId)).toEqual(['d', 'c', 'a', 'b']);
  });

  it('builds nothing from nothing', () => {
    expect(buildSummaries([], NOW)).toEqual([]);
    expect(buildSummaries([source('blank', '   \n  ')], NOW)).toEqual([]);
  });
});
