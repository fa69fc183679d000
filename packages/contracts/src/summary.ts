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
