import type { MemoryEvent } from '@gm/contracts';
import { idempotencySlot } from './decide.ts';
import type { RecordState, SubjectState } from './state.ts';
import { movesFrom, recordTransitions, transitioned, type RecordTransition } from './transitions.ts';

/**
 * evolve(state, event) → state, pure and total: an event about a record this state has
 * never seen leaves the state unchanged rather than throwing, so replay never stops. Every
 * record event carries the version it produces; one that is not newer than the record is a
 * duplicate (an at-least-once producer, a replayed segment) and changes nothing.
 */
export function evolve(state: SubjectState, event: MemoryEvent): SubjectState {
  const draft = draftOf(state);
  evolveDraft(draft, event);
  return draft;
}

/**
 * A state whose maps the caller may change: `evolveDraft` then folds events into it in place,
 * one copy per subject instead of one per event (folding a subject with thousands of records
 * copied all of them for every event). Record states themselves are never changed in place, so
 * the state `draftOf` was taken from is untouched.
 */
export function draftOf(state: SubjectState): SubjectState {
  const draft: SubjectState = { records: { ...state.records }, idempotency: { ...state.idempotency } };
  if (state.keyGeneration !== undefined) draft.keyGeneration = state.keyGeneration;
  return draft;
}

/** `evolve` on a draft (`draftOf`): its maps change in place. */
export function evolveDraft(draft: SubjectState, event: MemoryEvent): void {
  const { records, idempotency } = draft;
  let keyGeneration = draft.keyGeneration;
  // The latest result per slot: decide only lets a slot produce events again once its
  // window has passed, and then the new result is the one a retry must get.
  const remember = (result: SubjectState['idempotency'][string]['result'], recordId?: string) => {
    if (recordId !== undefined && !records[recordId]) return;
    // A replayed older event (a restart folding from a checkpoint the state had already passed)
    // must not hand a slot back the result it had before its window passed.
    const slot = idempotency[idempotencySlot(event.metadata)];
    if (slot !== undefined && Date.parse(slot.at) > Date.parse(event.metadata.now)) return;
    const { requestHash } = event.metadata;
    idempotency[idempotencySlot(event.metadata)] = { result, at: event.metadata.now, ...(requestHash === undefined ? {} : { requestHash }) };
  };
  const update = (id: string, version: number, change: (r: RecordState) => RecordState) => {
    const r = records[id];
    if (r && version > r.meta.version) records[id] = change(r);
  };
  /**
   * A forget or a purge takes the fingerprints of the requests that wrote the records with it
   * (§5.6): a fingerprint hashes the request body, content included, so a replayed key compared
   * against it would tell a right guess (the first result) from a wrong one (a mismatch). The
   * slot keeps its first result, which a replay then gets whatever it sends.
   */
  const forgetFingerprints = (ids: ReadonlySet<string>) => {
    for (const [slot, entry] of Object.entries(idempotency)) {
      if (entry.requestHash === undefined || entry.result.id === undefined || !ids.has(entry.result.id)) continue;
      const { requestHash: _dropped, ...kept } = entry;
      idempotency[slot] = kept;
    }
  };
  const transition = (r: RecordState, t: RecordTransition): RecordState => {
    const { pendingContent: _dropped, pendingAt: _at, ...rest } = r;
    return { ...rest, meta: transitioned(r.meta, t) };
  };

  if (event.type === 'MemoryWritten') {
    const { content, ...meta } = event.data.record;
    const current = records[meta.id];
    if (current && current.meta.version >= meta.version) return;
    records[meta.id] = meta.status === 'quarantined' ? { meta, pendingContent: content } : { meta };
    remember({ id: meta.id, version: meta.version, status: meta.status });
    return;
  }
  // The record's status after the event: the one transition table (transitions.ts).
  for (const t of recordTransitions(event)) {
    update(t.id, t.version, (r) => (movesFrom(t, r.meta.status) ? { ...transition(r, t), ...(t.deletion ? { deletion: t.deletion } : {}) } : r));
  }
  // What the decider keeps beyond the records: idempotency results, fingerprints, key generations.
  switch (event.type) {
    case 'MemoryPromoted':
      remember({ id: event.data.id, version: event.data.version, status: 'active' }, event.data.id);
      break;
    case 'MemoryRevocationRequested':
      remember({ id: event.data.id, version: event.data.version, status: 'revocation_pending', jobId: event.data.jobId }, event.data.id);
      break;
    case 'SubjectForgotten':
      forgetFingerprints(new Set(event.data.records.map((r) => r.id)));
      remember({ jobId: event.data.jobId });
      // Max, not +1: folding the same forget twice (a redelivery) must not skip a generation.
      keyGeneration = Math.max(keyGeneration ?? 1, (event.data.keyGeneration ?? keyGeneration ?? 1) + 1);
      break;
    case 'MemoryTombstoned':
      if (event.data.reason === 'rejected') remember({ id: event.data.id, version: event.data.version, status: 'tombstoned' }, event.data.id);
      break;
    case 'MemoryPurged':
      forgetFingerprints(new Set([event.data.id]));
      break;
    default:
      break;
  }
  if (keyGeneration !== undefined) draft.keyGeneration = keyGeneration;
}

/**
 * Drops idempotency slots older than the window before `now`: decide ignores them anyway (a
 * slot past its window may produce events again), so they only cost memory.
 */
export function pruneIdempotency(draft: SubjectState, now: string, windowMs: number): void {
  const oldest = Date.parse(now) - windowMs;
  for (const [slot, entry] of Object.entries(draft.idempotency)) {
    if (Date.parse(entry.at) < oldest) delete draft.idempotency[slot];
  }
}

export const fold = (events: Iterable<MemoryEvent>, state: SubjectState): SubjectState => {
  const draft = draftOf(state);
  for (const e of events) evolveDraft(draft, e);
  return draft;
};
