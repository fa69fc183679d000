import type { CapabilityClaims, SubjectSummaries } from '@gm/contracts';
import type { PolicyDecisionPoint } from '@gm/policy';
import type { SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { isReadable } from './retrieval.ts';

export interface SummaryReadDeps {
  summaries: SummaryStore;
  state: StateStore;
  pdp: PolicyDecisionPoint;
}

/** More summaries than partitions a subject can sensibly span; the port needs a bound. */
const MAX_SUMMARIES = 50;

/**
 * A subject's summaries through the partition-first plan (§6.3): verify (the caller did) →
 * PDP → authorised partitions (none ⇒ empty) → the summary store reads only those, only for
 * the capability's purpose → defense in depth: a summary is returned only if every record it
 * derives from is readable by this caller now (not tombstoned, active, unexpired, in an
 * authorised partition, purpose allowed) and still has the content the summary was built from.
 * A summary the index-builder has not yet rebuilt after a change is dropped whole, never
 * trimmed: its text cannot be split back into sources safely.
 */
export async function subjectSummaries(deps: SummaryReadDeps, claims: CapabilityClaims, subjectId: string, now: Date): Promise<SubjectSummaries> {
  const partitions = await deps.pdp.authorizedPartitions({ claims, action: 'search' });
  if (partitions.length === 0) return { items: [] };
  const hits = await deps.summaries.search({
    tenantId: claims.tenant, partitions, purpose: claims.purpose, subjectId, now: now.toISOString(), limit: MAX_SUMMARIES,
  });
  const ids = [...new Set(hits.flatMap((h) => h.summary.derivedFrom.map((d) => d.recordId)))];
  const tombstoned = await deps.state.tombstones.filterTombstoned(claims.tenant, ids);
  const metas = await deps.state.records.getMany(claims.tenant, ids);
  const authorised = new Set(partitions);
  const items = hits
    .map((h) => h.summary)
    .filter((s) => s.derivedFrom.every((d) => {
      const meta = metas.get(d.recordId);
      return isReadable(meta, claims, authorised, now, tombstoned.has(d.recordId)) && meta.contentHash === d.contentHash;
    }))
    .map((s) => ({ subjectId: s.subjectId, text: s.text, derivedFrom: s.derivedFrom.map((d) => d.recordId), updatedAt: s.updatedAt }));
  return { items };
}
