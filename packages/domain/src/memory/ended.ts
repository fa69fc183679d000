import type { MemoryEvent } from '@gm/contracts';
import { isSearchable, recordTransitions } from './transitions.ts';

/**
 * The records an event ends: from this event on they are never retrievable again (superseded,
 * expired, being deleted, tombstoned, purged, or forgotten with their subject). Every copy that
 * mirrors the active records — the keyword and vector indexes, the expiry schedule, the
 * summaries — drops them on this one answer, read from the transition table: every transition to
 * a status search does not return. A write or a promotion ends nothing.
 */
export function endedRecordIds(event: MemoryEvent): string[] {
  return recordTransitions(event).filter((t) => !isSearchable(t.patch.status)).map((t) => t.id);
}

/** The records an event changes at all: the one it writes or promotes, or those it ends. */
export function touchedRecordIds(event: MemoryEvent): string[] {
  if (event.type === 'MemoryWritten') return [event.data.record.id];
  if (event.type === 'MemoryPromoted') return [event.data.id];
  return endedRecordIds(event);
}
