import { isUnreadableContent, type MemoryEvent, type MemoryRecord, type RecordMeta } from '@gm/contracts';
import { endedRecordIds } from './ended.ts';
import { isSearchable } from './transitions.ts';

/**
 * What a batch of events leaves of each record for an index of active records (keyword,
 * vector): its last state in log order. Shared by the index-builder and the vector-indexer, so
 * both keep exactly the same set: active ⇒ present, anything else ⇒ removed.
 * - `present` with its content;
 * - `present` without content: a promotion that carried none, of a record this batch did not
 *   write — the caller reads the content it already holds, and changes nothing without it;
 * - `absent`: ended, not active, or its content erased (a replay after a forget).
 */
export type IndexedRecordState =
  | { tenantId: string; recordId: string; kind: 'present'; meta: RecordMeta; content: string }
  | { tenantId: string; recordId: string; kind: 'present'; meta: RecordMeta; content: undefined }
  | { tenantId: string; recordId: string; kind: 'absent' };

/** In the order of each record's last change. */
export function lastIndexedStates(events: readonly MemoryEvent[]): IndexedRecordState[] {
  const last = new Map<string, IndexedRecordState>();
  const set = (state: IndexedRecordState) => {
    const key = `${state.tenantId}\u0000${state.recordId}`;
    last.delete(key);
    last.set(key, state);
  };
  for (const event of events) {
    const tenantId = event.metadata.tenantId;
    switch (event.type) {
      case 'MemoryWritten': {
        const { content, ...meta }: MemoryRecord = event.data.record;
        const recordId = meta.id;
        set(isSearchable(meta.status) && !isUnreadableContent(content)
          ? { tenantId, recordId, kind: 'present', meta, content }
          : { tenantId, recordId, kind: 'absent' });
        break;
      }
      case 'MemoryPromoted': {
        const recordId = event.data.id;
        const earlier = last.get(`${tenantId}\u0000${recordId}`);
        if (event.data.content !== undefined) {
          if (!isUnreadableContent(event.data.content)) set({ tenantId, recordId, kind: 'present', meta: event.data.record, content: event.data.content });
        } else if (earlier === undefined) {
          set({ tenantId, recordId, kind: 'present', meta: event.data.record, content: undefined });
        } else if (earlier.kind === 'present') {
          // Removed earlier in the batch: nothing to promote, it stays removed.
          set({ ...earlier, meta: event.data.record });
        }
        break;
      }
      default:
        for (const recordId of endedRecordIds(event)) set({ tenantId, recordId, kind: 'absent' });
    }
  }
  return [...last.values()];
}

export type PresentRecordState = Extract<IndexedRecordState, { kind: 'present' }>;

/** `lastIndexedStates` as an index writes it: the present records in order, the absent ones' ids per tenant. */
export function indexChanges(events: readonly MemoryEvent[]): { present: PresentRecordState[]; removals: Map<string, string[]> } {
  const present: PresentRecordState[] = [];
  const removals = new Map<string, string[]>();
  for (const state of lastIndexedStates(events)) {
    if (state.kind === 'present') {
      present.push(state);
      continue;
    }
    const ids = removals.get(state.tenantId) ?? [];
    if (ids.length === 0) removals.set(state.tenantId, ids);
    ids.push(state.recordId);
  }
  return { present, removals };
}
