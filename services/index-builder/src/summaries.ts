import type { ConsumedMessage, ProcessContext } from '@gm/bus';
import { DeletionTask, ERASED_SUBJECT_ID, deletionAck, type Clock, type MemoryEvent } from '@gm/contracts';
import { SUMMARY_KINDS, isRetired, isSearchable, summaryOfPurpose, touchedRecordIds, type PurposeSummary } from '@gm/domain';
import type { IndexDocument, RankCursor, ScopeSummaries, SearchIndex, Summary, SummaryStore } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { toIndexDocument } from './index-document.ts';

export interface SummaryDeps {
  index: SearchIndex;
  summaries: SummaryStore;
  state: StateStore;
}

/** One (partition, subject) whose summaries must be rebuilt. */
export interface SummaryScope {
  partition: string;
  subjectId: string;
}

const scopeKey = (s: SummaryScope) => `${s.partition}\u0000${s.subjectId}`;

/** Records and contents a rebuild leaves out on top of the deleted ones (a deletion task's). */
type Exclusions = { ids: ReadonlySet<string>; contentHashes: ReadonlySet<string> };
const NOTHING_EXCLUDED: Exclusions = { ids: new Set(), contentHashes: new Set() };


/** Documents a rebuild reads per page: a summary of 12 lines, with some duplicates and left-out lines, settles in one. */
const RANKED_PAGE = 32;
/** Scopes rebuilt at once: each is a few reads, so a batch of many subjects waits for the slowest, not for their sum. */
const SCOPES_AT_ONCE = 16;

/**
 * Rebuilds the summaries of each scope from the search index — the index-builder's own fold of
 * the log, so a summary is a function of the same events, in the same order — minus deleted
 * content: every record of the subject that is tombstoned or being deleted in the projector's
 * state (it may be ahead of us: a revocation it has seen is never summarised again), any other
 * document with the same content (a copy under another id must not carry deleted words back
 * in), and `exclude` (a deletion task's records and contents, whether or not the index has
 * dropped them yet). No source left ⇒ the scope's summaries are removed.
 */
export async function rebuildSummaries(
  deps: SummaryDeps, tenantId: string, scopes: SummaryScope[], now: string,
  exclude: Exclusions = NOTHING_EXCLUDED,
): Promise<{ rebuilt: number; removed: number }> {
  const unique = [...new Map(scopes.map((s) => [scopeKey(s), s])).values()];
  const built = await inPool(unique, (scope) => buildScope(deps, tenantId, scope, now, exclude));
  await deps.summaries.replaceMany(tenantId, built);
  const removed = built.filter((b) => b.summaries.length === 0).length;
  return { rebuilt: built.length - removed, removed };
}

/** `build` of every item, at most SCOPES_AT_ONCE at a time, results in input order. */
async function inPool<T, R>(items: readonly T[], build: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await build(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SCOPES_AT_ONCE, items.length) }, lane));
  return out;
}

/**
 * The summaries one scope must hold now (see rebuildSummaries); nothing is written. Each
 * purpose's sources are read best first, a page at a time, until the summary is settled
 * (summaryOfPurpose): the top of a subject, not all of it — a subject of thousands of facts
 * costs a rebuild what one of a dozen does. The record hash is still read for the whole subject:
 * the deleted contents may sit under any id.
 */
async function buildScope(
  deps: SummaryDeps, tenantId: string, { partition, subjectId }: SummaryScope, now: string,
  exclude: Exclusions,
): Promise<ScopeSummaries> {
  const ids = new Set(exclude.ids);
  const hashes = new Set(exclude.contentHashes);
  const scope = { tenantId, partition, subjectId, kinds: SUMMARY_KINDS, now };
  // The record hash and the index answer at once: neither read depends on the other.
  const [known, purposes] = await Promise.all([
    deps.state.records.idsOfSubject(tenantId, subjectId).then((subjectIds) => deps.state.records.statusesOf(tenantId, subjectIds)),
    deps.index.subjectPurposes(scope),
  ]);
  for (const meta of known.values()) {
    if (!isRetired(meta.status)) continue;
    ids.add(meta.id);
    hashes.add(meta.contentHash);
  }
  const summaries: Summary[] = [];
  for (const purpose of purposes) {
    // Pages come in the summary order (the port's promise, checked by its contract suite).
    const sources: IndexDocument[] = [];
    let after: RankCursor | undefined;
    let built: PurposeSummary;
    for (;;) {
      const page = await deps.index.subjectDocumentsRanked({ ...scope, purpose, limit: RANKED_PAGE, ...(after === undefined ? {} : { after }) });
      const kept = page.documents.filter((d) => !ids.has(d.recordId) && !hashes.has(d.contentHash));
      const tombstoned = await deps.state.tombstones.filterTombstoned(tenantId, kept.map((d) => d.recordId));
      sources.push(...kept.filter((d) => !tombstoned.has(d.recordId)));
      built = summaryOfPurpose(sources, purpose, now);
      if (page.next === undefined || built.settled) break;
      after = page.next;
    }
    if (built.summary !== undefined) summaries.push({ tenantId, partition, subjectId, updatedAt: now, ...built.summary });
  }
  return { partition, subjectId, summaries };
}

/** A scope some summary of which holds a record of a batch, and every record its summaries hold. */
interface HeldScope {
  scope: SummaryScope;
  ids: ReadonlySet<string>;
}

/**
 * The scopes whose summaries `event` may change, once `indexEvent` applied it to the index:
 * every summary that held a touched record (wherever it lived — a promotion may move a record
 * to another partition; `held` are the batch's, see heldScopes) and the scope the record is in now.
 */
function scopesOf(event: MemoryEvent, held: readonly HeldScope[]): SummaryScope[] {
  const touched = touchedRecordIds(event);
  const scopes = held.filter((h) => touched.some((id) => h.ids.has(id))).map((h) => h.scope);
  const record = event.type === 'MemoryWritten' ? event.data.record : event.type === 'MemoryPromoted' ? event.data.record : undefined;
  if (record !== undefined && isSearchable(record.status) && SUMMARY_KINDS.includes(record.kind)) {
    scopes.push({ partition: toIndexDocument(record, '').partition, subjectId: record.subjectId });
  }
  return scopes;
}

/**
 * Per tenant of `events`, the scopes holding a record the events touch, with what each holds:
 * one `holding` per tenant (none for new records, most of them), then one `get` per scope it
 * names — not a lookup per event. The store does not change until the batch is written, so an
 * event's scopes are what a `holding` of its own records would have named.
 */
async function heldScopes(deps: SummaryDeps, events: readonly MemoryEvent[]): Promise<Map<string, HeldScope[]>> {
  const touched = new Map<string, Set<string>>();
  for (const event of events) {
    const ids = touched.get(event.metadata.tenantId) ?? new Set<string>();
    for (const id of touchedRecordIds(event)) ids.add(id);
    touched.set(event.metadata.tenantId, ids);
  }
  const held = new Map<string, HeldScope[]>();
  for (const [tenantId, ids] of touched) {
    const keys = await deps.summaries.holding(tenantId, [...ids]);
    const scopes = [...new Map(keys.map((k) => [scopeKey(k), { partition: k.partition, subjectId: k.subjectId }])).values()];
    held.set(tenantId, await inPool(scopes, async (scope) => ({
      scope,
      ids: new Set((await deps.summaries.get(tenantId, scope.partition, scope.subjectId)).flatMap((summary) => summary.derivedFrom.map((d) => d.recordId))),
    })));
  }
  return held;
}

/**
 * Keeps the summaries in step with a batch of events that the index already holds: each scope
 * they touched is rebuilt once, stamped with the time of the last event that touched it — what
 * rebuilding after every event would have left, whatever the batch boundaries. Idempotent: a
 * redelivered batch finds the same index and builds the same summaries.
 */
export async function summarizeEvents(deps: SummaryDeps, events: readonly MemoryEvent[]): Promise<void> {
  const held = await heldScopes(deps, events);
  const pending = new Map<string, { tenantId: string; scope: SummaryScope; now: string }>();
  for (const event of events) {
    const tenantId = event.metadata.tenantId;
    for (const scope of scopesOf(event, held.get(tenantId) ?? [])) {
      const key = `${tenantId}\u0000${scopeKey(scope)}`;
      // Re-inserted so that scopes are rebuilt in the order of their last event.
      pending.delete(key);
      pending.set(key, { tenantId, scope, now: event.metadata.now });
    }
  }
  // Each scope built on its own time, several at once; each tenant's scopes written at once.
  const jobs = [...pending.values()];
  const scopes = await inPool(jobs, ({ tenantId, scope, now }) => buildScope(deps, tenantId, scope, now, NOTHING_EXCLUDED));
  const built = new Map<string, ScopeSummaries[]>();
  jobs.forEach(({ tenantId }, i) => {
    const tenantScopes = built.get(tenantId) ?? [];
    tenantScopes.push(scopes[i] as ScopeSummaries);
    built.set(tenantId, tenantScopes);
  });
  for (const [tenantId, tenantScopes] of built) await deps.summaries.replaceMany(tenantId, tenantScopes);
}

export function summarizeEvent(deps: SummaryDeps, event: MemoryEvent): Promise<void> {
  return summarizeEvents(deps, [event]);
}

/**
 * Executes deletion tasks for the `summary` target: every summary holding a job record is
 * rebuilt without it (or removed when nothing else is left). The evidence is what `holding`
 * still finds afterwards, read back — counts only, no text.
 */
export function summaryTargetHandler(deps: SummaryDeps, clock: Clock) {
  return async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const task = DeletionTask.parse(message.value);
    if (task.target !== 'summary') return;
    const ids = new Set(task.recordIds);
    const holding = await deps.summaries.holding(task.tenantId, task.recordIds);
    const scopes = holding.map((k) => ({ partition: k.partition, subjectId: k.subjectId }));
    // The deleted contents, as the record hash and the summaries recorded them (the index may
    // have dropped them already); the records' own scopes too, where a copy may sit under another id.
    const contentHashes = new Set<string>();
    const metas = [...(await deps.state.records.getMany(task.tenantId, task.recordIds)).values()];
    // A record the purge reached names no subject any more (§8.4): its job's subject is the one.
    const purgedSubject = metas.some((m) => m.subjectId === ERASED_SUBJECT_ID) ? (await deps.state.jobs.get(task.tenantId, task.jobId))?.subjectId : undefined;
    for (const meta of metas) {
      contentHashes.add(meta.contentHash);
      const subjectId = meta.subjectId === ERASED_SUBJECT_ID ? purgedSubject : meta.subjectId;
      if (subjectId !== undefined) scopes.push({ partition: toIndexDocument(meta, '').partition, subjectId });
    }
    for (const scope of scopes) {
      for (const summary of await deps.summaries.get(task.tenantId, scope.partition, scope.subjectId)) {
        for (const source of summary.derivedFrom) if (ids.has(source.recordId)) contentHashes.add(source.contentHash);
      }
    }
    const { rebuilt, removed } = await rebuildSummaries(deps, task.tenantId, scopes, clock.now().toISOString(), { ids, contentHashes });
    const remaining = (await deps.summaries.holding(task.tenantId, task.recordIds)).length;
    ctx.send([deletionAck(task, 'index-builder', clock, {
      ok: remaining === 0, ref: `holding=${holding.length};rebuilt=${rebuilt};removed=${removed};remaining=${remaining}`,
    })]);
  };
}
