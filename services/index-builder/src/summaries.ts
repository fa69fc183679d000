import type { ConsumedMessage, ProcessContext } from '@gm/bus';
import { DeletionTask, deletionAck, type Clock, type MemoryEvent } from '@gm/contracts';
import { SUMMARY_KINDS, buildSummaries, isRetired, isSearchable, touchedRecordIds } from '@gm/domain';
import type { ScopeSummaries, SearchIndex, Summary, SummaryStore } from '@gm/search-index';
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
  const unique = new Map(scopes.map((s) => [scopeKey(s), s]));
  const built: ScopeSummaries[] = [];
  for (const scope of unique.values()) built.push(await buildScope(deps, tenantId, scope, now, exclude));
  await deps.summaries.replaceMany(tenantId, built);
  const removed = built.filter((b) => b.summaries.length === 0).length;
  return { rebuilt: built.length - removed, removed };
}

/** The summaries one scope must hold now (see rebuildSummaries); nothing is written. */
async function buildScope(
  deps: SummaryDeps, tenantId: string, { partition, subjectId }: SummaryScope, now: string,
  exclude: Exclusions,
): Promise<ScopeSummaries> {
  const ids = new Set(exclude.ids);
  const hashes = new Set(exclude.contentHashes);
  const known = await deps.state.records.statusesOf(tenantId, await deps.state.records.idsOfSubject(tenantId, subjectId));
  for (const meta of known.values()) {
    if (!isRetired(meta.status)) continue;
    ids.add(meta.id);
    hashes.add(meta.contentHash);
  }
  const docs = (await deps.index.subjectDocuments(tenantId, partition, subjectId))
    .filter((d) => !ids.has(d.recordId) && !hashes.has(d.contentHash));
  const tombstoned = await deps.state.tombstones.filterTombstoned(tenantId, docs.map((d) => d.recordId));
  const summaries: Summary[] = buildSummaries(docs.filter((d) => !tombstoned.has(d.recordId)), now)
    .map((b) => ({ tenantId, partition, subjectId, updatedAt: now, ...b }));
  return { partition, subjectId, summaries };
}

/**
 * The scopes whose summaries `event` may change, once `indexEvent` applied it to the index:
 * every summary that held a touched record (wherever it lived — a promotion may move a record
 * to another partition) and the scope the record is in now. `held` is false when no summary
 * holds any record the batch touches (new records mostly): then there is nothing to look up.
 */
async function scopesOf(deps: SummaryDeps, event: MemoryEvent, held: boolean): Promise<SummaryScope[]> {
  const tenantId = event.metadata.tenantId;
  const scopes: SummaryScope[] = held
    ? (await deps.summaries.holding(tenantId, touchedRecordIds(event))).map((k) => ({ partition: k.partition, subjectId: k.subjectId }))
    : [];
  const record = event.type === 'MemoryWritten' ? event.data.record : event.type === 'MemoryPromoted' ? event.data.record : undefined;
  if (record !== undefined && isSearchable(record.status) && SUMMARY_KINDS.includes(record.kind)) {
    scopes.push({ partition: toIndexDocument(record, '').partition, subjectId: record.subjectId });
  }
  return scopes;
}

/** The tenants of `events` of which some summary holds a record the events touch: one lookup per tenant. */
async function tenantsHolding(deps: SummaryDeps, events: readonly MemoryEvent[]): Promise<Set<string>> {
  const touched = new Map<string, Set<string>>();
  for (const event of events) {
    const ids = touched.get(event.metadata.tenantId) ?? new Set<string>();
    for (const id of touchedRecordIds(event)) ids.add(id);
    touched.set(event.metadata.tenantId, ids);
  }
  const holding = new Set<string>();
  for (const [tenantId, ids] of touched) {
    if ((await deps.summaries.holding(tenantId, [...ids])).length > 0) holding.add(tenantId);
  }
  return holding;
}

/**
 * Keeps the summaries in step with a batch of events that the index already holds: each scope
 * they touched is rebuilt once, stamped with the time of the last event that touched it — what
 * rebuilding after every event would have left, whatever the batch boundaries. Idempotent: a
 * redelivered batch finds the same index and builds the same summaries.
 */
export async function summarizeEvents(deps: SummaryDeps, events: readonly MemoryEvent[]): Promise<void> {
  const holding = await tenantsHolding(deps, events);
  const pending = new Map<string, { tenantId: string; scope: SummaryScope; now: string }>();
  for (const event of events) {
    const tenantId = event.metadata.tenantId;
    for (const scope of await scopesOf(deps, event, holding.has(tenantId))) {
      const key = `${tenantId}\u0000${scopeKey(scope)}`;
      // Re-inserted so that scopes are rebuilt in the order of their last event.
      pending.delete(key);
      pending.set(key, { tenantId, scope, now: event.metadata.now });
    }
  }
  // Each scope built on its own time; each tenant's scopes written at once.
  const built = new Map<string, ScopeSummaries[]>();
  for (const { tenantId, scope, now } of pending.values()) {
    const scopes = built.get(tenantId) ?? [];
    scopes.push(await buildScope(deps, tenantId, scope, now, NOTHING_EXCLUDED));
    built.set(tenantId, scopes);
  }
  for (const [tenantId, scopes] of built) await deps.summaries.replaceMany(tenantId, scopes);
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
    for (const meta of (await deps.state.records.getMany(task.tenantId, task.recordIds)).values()) {
      contentHashes.add(meta.contentHash);
      scopes.push({ partition: toIndexDocument(meta, '').partition, subjectId: meta.subjectId });
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
