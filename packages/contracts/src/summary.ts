import { z } from 'zod';
import { Id, IsoTime } from './primitives.ts';

/**
 * GET /v1/subjects/{subjectId}/summary (§6.8): the extractive summaries of a subject in the
 * partitions the caller may search, for the caller's purpose. No partition names, no counts of
 * what was left out: an unauthorised subject and an unknown one both answer `{items: []}`.
 */
export const SubjectSummary = z
  .object({
    subjectId: Id,
    /** One line per source record, taken verbatim from its content. */
    text: z.string(),
    /** The records the text was built from; every one is readable by the caller right now. */
    derivedFrom: z.array(Id),
    updatedAt: IsoTime,
  })
  .strict();
export type SubjectSummary = z.infer<typeof SubjectSummary>;

export const SubjectSummaries = z.object({ items: z.array(SubjectSummary) }).strict();
export type SubjectSummaries = z.infer<typeof SubjectSummaries>;

/** What places a source in a summary's order. */
export interface SummaryRankOf {
  confidence: number;
  createdAt: string;
  recordId: string;
}

/** A source's place in the summary order, computed once (the comparison runs per pair). */
export interface SummaryRank {
  confidence: number;
  createdMs: number;
  recordId: string;
}

/**
 * The order a summary reads its sources in (§6.8): confidence, higher first, at the precision
 * Elasticsearch keeps it (a 32-bit float, so both search indexes page a subject in the very
 * same order), then createdAt, newer first, then recordId.
 */
export const summaryRank = (s: SummaryRankOf): SummaryRank => ({
  confidence: Math.fround(s.confidence), createdMs: Date.parse(s.createdAt), recordId: s.recordId,
});

export const compareSummaryRank = (a: SummaryRank, b: SummaryRank): number =>
  b.confidence - a.confidence || b.createdMs - a.createdMs || (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : 0);
