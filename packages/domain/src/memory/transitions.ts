/**
 * The record's lifecycle in one table (§3): which status an event leaves each record in, and
 * what each status means to readers and to deletion. The decider's evolve, the projector, the
 * indexes, the summaries and the verifier all ask here, so no consumer keeps a switch of its own.
 */
import { ERASED_CONTENT_HASH, ERASED_SUBJECT_ID, erasedProvenance, type MemoryEvent, type RecordMeta, type RecordStatus } from '@gm/contracts';

/** Still holds content somewhere and may be forgotten; its id is still its writer's. */
export const LIVE_STATUSES: readonly RecordStatus[] = ['quarantined', 'active', 'superseded', 'expired'];

export const isLive = (status: RecordStatus): boolean => LIVE_STATUSES.includes(status);

/**
 * Being or been deleted (revocation, delete, forget): the read path denies it, its history answers
 * like an id that never existed (§6.4), and its id is never given out again.
 */
export const isRetired = (status: RecordStatus): boolean => !isLive(status);

/** Found by search, summarised and indexed: active records only. */
export const isSearchable = (status: RecordStatus): boolean => status === 'active';

/** Read by id: the current record, and one a correction superseded (history stays, §3). */
export const isReadableById = (status: RecordStatus): boolean => status === 'active' || status === 'superseded';

/**
 * Tombstoned but not purged: its content is still kept — for audit (a revocation), for a legal
 * hold (its job kept it), or until its job purges it. A later delete or forget takes it in, so
 * content a released hold kept is never out of reach of a new request.
 */
export const isRetained = (status: RecordStatus): boolean => status === 'tombstoned';

/** What an event does to one record it names. */
export interface RecordTransition {
  id: string;
  /** The version the event makes; a record already at it or newer is not changed. */
  version: number;
  /** The record's fields after the event: `status` always, and what else the event sets. */
  patch: Partial<RecordMeta> & { status: RecordStatus; version: number };
  /** The deletion that retires the record, kept by the decider's state. */
  deletion?: { jobId: string; reason: 'revoked' | 'deleted' | 'forgotten' };
  /** Applies only to a record in one of these statuses; any other is left as it is. */
  from?: readonly RecordStatus[];
  /** The record's content goes (a purge): so do its hash and what names its sources (§8.4). */
  erases?: true;
}

/** A record's fields after `transition` (the evolve of the decider and the projector alike). */
export function transitioned(meta: RecordMeta, transition: RecordTransition): RecordMeta {
  const next = { ...meta, ...transition.patch };
  return transition.erases ? { ...next, provenance: erasedProvenance(next.provenance) } : next;
}

const to = (id: string, version: number, status: RecordStatus, fields: Partial<RecordMeta> = {}): RecordTransition =>
  ({ id, version, patch: { ...fields, status, version } });

/**
 * The transitions an event makes, in the event's order. A write creates a record rather than
 * moving one, so it has none; every other event has one per record it names.
 */
export function recordTransitions(event: MemoryEvent): RecordTransition[] {
  switch (event.type) {
    case 'MemoryWritten':
      return [];
    case 'MemoryPromoted':
      return [{ id: event.data.id, version: event.data.version, patch: { ...event.data.record, status: 'active', version: event.data.version } }];
    case 'MemorySuperseded':
      return [to(event.data.id, event.data.version, 'superseded', { supersededById: event.data.supersededById })];
    case 'MemoryExpired':
      return [to(event.data.id, event.data.version, 'expired')];
    case 'MemoryRevocationRequested': {
      // Tombstone first: the read path denies from here on, before any purge work (§3). A record
      // an earlier revocation tombstoned stays tombstoned.
      const deletion = { jobId: event.data.jobId, reason: event.data.mode === 'revoke' ? 'revoked' as const : 'deleted' as const };
      return [
        { ...to(event.data.id, event.data.version, event.data.alreadyTombstoned ? 'tombstoned' : 'revocation_pending'), deletion },
        ...(event.data.copies ?? []).map((c) => ({ ...to(c.id, c.version, 'revocation_pending'), deletion })),
      ];
    }
    case 'SubjectForgotten':
      return event.data.records.map(({ id, version, alreadyTombstoned }) => ({
        ...to(id, version, alreadyTombstoned ? 'tombstoned' : 'revocation_pending'),
        deletion: { jobId: event.data.jobId, reason: 'forgotten' as const },
        // A forget takes live records, and revoked ones whose content was retained for audit.
        ...(alreadyTombstoned ? {} : { from: LIVE_STATUSES }),
      }));
    case 'MemoryTombstoned':
      return [to(event.data.id, event.data.version, 'tombstoned')];
    case 'MemoryPurged':
      // The content hash goes with the content: a plain hash of it is content (§8.4). So does
      // where it came from: a source's uri (`crm://patients/jane-…/oncology`) is about the subject.
      // And whom it was about: the record keeps only that its id was used (ids are never reused).
      return [{ ...to(event.data.id, event.data.version, 'purged', { contentHash: ERASED_CONTENT_HASH, subjectId: ERASED_SUBJECT_ID }), erases: true }];
    default: {
      const never: never = event;
      throw new Error(`unhandled event ${JSON.stringify(never)}`);
    }
  }
}

/** Whether `transition` moves a record now in `status` (its `from`, when it names one). */
export const movesFrom = (transition: RecordTransition, status: RecordStatus): boolean =>
  transition.from === undefined || transition.from.includes(status);
