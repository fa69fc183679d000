import type { MemoryKind } from '@gm/contracts';

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

/**
 * Purpose rule: one summary per purpose found among the sources, built only from the sources
 * that allow that purpose. A reader with purpose P reads the P summary; its text never holds a
 * line from a record P may not read. (An intersection of all sources' purposes would make most
 * summaries unreadable as soon as two records differ in purposes.)
 *
 * Order: confidence (higher first), then createdAt (newer first), then recordId — the same
 * sources give the same text whatever order they arrive in. Sources expired at `now` are left
 * out, so a rebuild never carries a record whose expiry event is still on its way.
 */
export function buildSummaries(sources: SummarySourceInput[], now: string, limits: Readonly<SummaryLimits> = SUMMARY_LIMITS): BuiltSummary[] {
  const nowMs = Date.parse(now);
  const live = sources.filter((s) => SUMMARY_KINDS.includes(s.kind) && Date.parse(s.expiresAt) > nowMs);
  // Times parsed once per source, not once per comparison.
  const createdMs = new Map(live.map((s) => [s, Date.parse(s.createdAt)]));
  const ordered = [...live].sort(
    (a, b) => b.confidence - a.confidence || (createdMs.get(b) ?? 0) - (createdMs.get(a) ?? 0) || compareText(a.recordId, b.recordId),
  );
  const purposes = [...new Set(live.flatMap((s) => s.purposes))].sort(compareText);
  const out: BuiltSummary[] = [];
  for (const purpose of purposes) {
    const lines: string[] = [];
    const seen = new Set<string>();
    const used: SummarySourceInput[] = [];
    let length = 0;
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
      if (lines.length >= limits.maxSources) break;
      const added = (lines.length === 0 ? 0 : 1) + line.length;
      if (length + added > limits.maxChars) continue;
      lines.push(line);
      seen.add(normalised);
      used.push(source);
      length += added;
    }
    if (lines.length === 0) continue;
    const expiresAt = used.reduce((min, s) => (Date.parse(s.expiresAt) < Date.parse(min) ? s.expiresAt : min), used[0]?.expiresAt ?? now);
    out.push({
      purpose,
      text: lines.join('\n'),
      derivedFrom: used.map((s) => ({ recordId: s.recordId, version: s.version, contentHash: s.contentHash }))
        .sort((a, b) => compareText(a.recordId, b.recordId)),
      expiresAt,
    });
  }
  return out;
}
