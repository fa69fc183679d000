/**
 * The ranked pages of a subject's summary sources (SearchIndex.subjectDocumentsRanked) over rows
 * that carry only what ranks and filters them: the adapter reads the subject's keys, which are
 * small, ranks them here in the summary order, and fetches the content of one page only.
 */
import { compareSummaryRank, summaryRank } from '@gm/contracts';
import type { RankCursor, RankedSubjectQuery } from '../port.ts';
import { decodeRankCursor, encodeRankCursor } from '../rank-cursor.ts';

/** What a row needs to be filtered and ranked. */
export interface RankKeyRow {
  recordId: string;
  kind: string;
  purposes: readonly string[];
  confidence: number;
  createdAt: string;
  expiresAtMs: number;
}

/** The rows that are summary sources: of the kinds asked, not expired at `nowMs`. */
const sources = (rows: readonly RankKeyRow[], kinds: readonly string[], nowMs: number) =>
  rows.filter((r) => kinds.includes(r.kind) && r.expiresAtMs > nowMs);

/** The purposes the sources among `rows` allow, sorted (SearchIndex.subjectPurposes). */
export function sourcePurposes(rows: readonly RankKeyRow[], kinds: readonly string[], nowMs: number): string[] {
  return [...new Set(sources(rows, kinds, nowMs).flatMap((r) => r.purposes))].sort();
}

/** The ids of the page `query` asks for, in the summary order, and the cursor after it when it is full. */
export function rankPage(rows: readonly RankKeyRow[], query: RankedSubjectQuery, nowMs: number): { ids: string[]; next?: RankCursor } {
  const limit = Math.floor(query.limit);
  if (!(limit > 0)) return { ids: [] };
  const position = query.after === undefined ? undefined : decodeRankCursor(query.after);
  const after = position === undefined ? undefined : { confidence: position[0], createdMs: position[1], recordId: position[2] };
  const ranked = sources(rows, query.kinds, nowMs)
    .filter((r) => r.purposes.includes(query.purpose))
    .map((r) => ({ id: r.recordId, rank: summaryRank(r) }))
    .filter((r) => after === undefined || compareSummaryRank(after, r.rank) < 0)
    .sort((a, b) => compareSummaryRank(a.rank, b.rank))
    .slice(0, limit);
  const last = ranked.at(-1);
  return { ids: ranked.map((r) => r.id), ...(ranked.length === limit && last !== undefined ? { next: encodeRankCursor([last.rank.confidence, last.rank.createdMs, last.rank.recordId]) } : {}) };
}
