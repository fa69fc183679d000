import { compareSummaryRank, summaryRank, type MemoryKind } from '@gm/contracts';

/**
 * Extractive summaries (§6.8): per (partition, subject) a few lines taken verbatim from the
 * active records about that subject. No model, no paraphrase: every character of the text is
 * a prefix of one source's content, so a summary can hold nothing its sources do not, and
 * rebuilding from the same sources always gives the same text.
 */

/** Only facts are summarised: notes are scratch work, skills and preferences are not "what is known". */
export const SUMMARY_KINDS: readonly MemoryKind[] = ['fact'];

export interface SummaryLimits {
  maxSources: number;
  maxChars: number;
  maxLineChars: number;
}

export const SUMMARY_LIMITS: Readonly<SummaryLimits> = {
  /** At most this many sources contribute a line. */
  maxSources: 12,
  /** Text bound, in characters; a line that does not fit is skipped, shorter later ones still may. */
  maxChars: 1200,
  /** One line (a source's first sentence) is cut at a word boundary beyond this. */
  maxLineChars: 240,
};

export interface SummarySourceInput {
  recordId: string;
  version: number;
  contentHash: string;
  content: string;
  kind: MemoryKind;
  purposes: string[];
  confidence: number;
  createdAt: string;
  expiresAt: string;
}

export interface BuiltSummary {
  /** The one purpose this summary may be read for; every source allows it. */
  purpose: string;
  /** One line per contributing source, best first, joined by "\n". */
  text: string;
  /** Exactly the records whose content is in `text` (a duplicate line lists every record it came from). */
  derivedFrom: Array<{ recordId: string; version: number; contentHash: string }>;
  /** The earliest expiry among the sources: the summary must not outlive any of them. */
  expiresAt: string;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The first sentence of the first non-empty line, whitespace collapsed, cut at a word boundary. */
export function firstSentence(content: string, maxChars: number = SUMMARY_LIMITS.maxLineChars): string {
  const line = content.split(/\r?\n/).map((l) => l.replace(/\s+/g, ' ').trim()).find((l) => l.length > 0) ?? '';
  const sentence = /^.*?[.!?](?=\s|$)/.exec(line)?.[0] ?? line;
  if (sentence.length <= maxChars) return sentence;
  const cut = sentence.slice(0, maxChars);
  const space = cut.lastIndexOf(' ');
  return `${(space > maxChars / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** The sources a summary may be built from at `now`: summarised kinds, not expired. */
export const isSummarySource = (s: Pick<SummarySourceInput, 'kind' | 'expiresAt'>, nowMs: number): boolean =>
  SUMMARY_KINDS.includes(s.kind) && Date.parse(s.expiresAt) > nowMs;

/** `sources` in the summary order (contracts' compareSummaryRank). */
export function inSummaryOrder<T extends SummarySourceInput>(sources: readonly T[]): T[] {
  // Ranks computed once per source, not once per comparison.
  const ranked = sources.map((s) => ({ s, rank: summaryRank(s) }));
  ranked.sort((a, b) => compareSummaryRank(a.rank, b.rank));
  return ranked.map((r) => r.s);
}

/** One purpose's summary of some sources, and whether sources ranked after them could change it. */
export interface PurposeSummary {
  summary: BuiltSummary | undefined;
  /**
   * True when the scan stopped before the last source (the line bound was reached and a new
   * line came): sources ranked after the given ones cannot change the summary. A rebuild reads
   * a subject's sources best first, a page at a time, until this says so.
   */
  settled: boolean;
}

/**
 * The `purpose` summary of `ordered` — summary sources (isSummarySource) in the summary order —
 * built only from the sources that allow it: see buildSummaries.
 */
export function summaryOfPurpose(ordered: readonly SummarySourceInput[], purpose: string, now: string, limits: Readonly<SummaryLimits> = SUMMARY_LIMITS): PurposeSummary {
  const lines: string[] = [];
  const seen = new Set<string>();
  const used: SummarySourceInput[] = [];
  let length = 0;
  let settled = false;
  for (const source of ordered) {
    if (!source.purposes.includes(purpose)) continue;
    const line = firstSentence(source.content, limits.maxLineChars);
    if (line.length === 0) continue;
    const normalised = line.toLowerCase();
    if (seen.has(normalised)) {
      // Same words from another record: the text does not grow, but it now derives from both,
      // so deleting either one rebuilds this summary.
      used.push(source);
      continue;
    }
    if (lines.length >= limits.maxSources) {
      settled = true;
      break;
    }
    const added = (lines.length === 0 ? 0 : 1) + line.length;
    if (length + added > limits.maxChars) continue;
    lines.push(line);
    seen.add(normalised);
    used.push(source);
    length += added;
  }
  if (lines.length === 0) return { summary: undefined, settled };
  const expiresAt = used.reduce((min, s) => (Date.parse(s.expiresAt) < Date.parse(min) ? s.expiresAt : min), used[0]?.expiresAt ?? now);
  return {
    settled,
    summary: {
      purpose,
      text: lines.join('\n'),
      derivedFrom: used.map((s) => ({ recordId: s.recordId, version: s.version, contentHash: s.contentHash }))
        .sort((a, b) => compareText(a.recordId, b.recordId)),
      expiresAt,
    },
  };
}

/**
 * Purpose rule: one summary per purpose found among the sources, built only from the sources
 * that allow that purpose. A reader with purpose P reads the P summary; its text never holds a
 * line from a record P may not read. (An intersection of all sources' purposes would make most
 * summaries unreadable as soon as two records differ in purposes.)
 *
 * Order: the summary order (confidence, then createdAt, newer first, then id) — the same
 * sources give the same text whatever order they arrive in. Sources expired at `now` are left
 * out, so a rebuild never carries a record whose expiry event is still on its way.
 */
export function buildSummaries(sources: SummarySourceInput[], now: string, limits: Readonly<SummaryLimits> = SUMMARY_LIMITS): BuiltSummary[] {
  const nowMs = Date.parse(now);
  const ordered = inSummaryOrder(sources.filter((s) => isSummarySource(s, nowMs)));
  const purposes = [...new Set(ordered.flatMap((s) => s.purposes))].sort(compareText);
  return purposes.flatMap((purpose) => summaryOfPurpose(ordered, purpose, now, limits).summary ?? []);
}
