import type { MemoryEvent } from '@gm/contracts';

/**
 * The records an event ends: from this event on they are never retrievable again (superseded,
 * expired, being deleted, tombstoned, purged, or forgotten with their subject). Every copy that
 * mirrors the active records — the keyword and vector indexes, the expiry schedule, the
 * summaries — drops them on this one answer, so no consumer keeps a switch of its own that
 * could miss a new way for a record to end. A write or a promotion ends nothing.
 */
export function endedRecordIds(event: MemoryEvent): string[] {
  switch (event.type) {
    case 'MemoryWritten':
    case 'MemoryPromoted':
      return [];
    case 'SubjectForgotten':
      return event.data.records.map((r) => r.id);
    case 'MemoryRevocationRequested':
      return [event.data.id, ...(event.data.copies ?? []).map((c) => c.id)];
    case 'MemorySuperseded':
    case 'MemoryExpired':
    case 'MemoryTombstoned':
    case 'MemoryPurged':
      return [event.data.id];
    default: {
      const never: never = event;
      throw new Error(`unhandled event ${JSON.stringify(never)}`);
    }
  }
}

/** The records an event changes at all: the one it writes or promotes, or those it ends. */
export function touchedRecordIds(event: MemoryEvent): string[] {
  if (event.type === 'MemoryWritten') return [event.data.record.id];
  if (event.type === 'MemoryPromoted') return [event.data.id];
  return endedRecordIds(event);
}
