import { subscribeToMemoryEventBatches, type Bus } from '@gm/bus';
import { movesFrom, recordTransitions, touchedRecordIds, transitioned } from '@gm/domain';
import { CONSUMER_GROUPS, TOPICS, erasedProvenance, type MemoryEvent, type RecordMeta, type ServiceHandle, type StoredRecordVersion } from '@gm/contracts';
import type { Logger } from '@gm/observability';
import { recordRef, type KvWrite, type StateStore } from '@gm/state-store';

export const PROJECTOR_GROUP = CONSUMER_GROUPS.projector;

export interface ProjectorDeps {
  bus: Bus;
  state: StateStore;
  log: Logger;
}

/**
 * Folds memory.events into the record hash (metadata only), the primary content copy, the
 * tombstones, every record's versions (metadata only, removed at its purge) and memory.records (compacted), a batch at a time: one read of every record the
 * batch touches, the fold in memory (the projector is the only writer of the record hash, so
 * the versions it read stay current), and one pipeline of writes — two round trips per batch
 * instead of several per event. Idempotent: every record write is version-guarded, so a
 * redelivered event changes nothing. Returns the records it changed, in order.
 */
export async function projectEvents(state: StateStore, events: readonly MemoryEvent[]): Promise<RecordMeta[]> {
  const refs = new Map<string, { tenantId: string; id: string }>();
  for (const event of events) {
    for (const id of touchedRecordIds(event)) refs.set(recordRef(event.metadata.tenantId, id), { tenantId: event.metadata.tenantId, id });
  }
  const current = await state.records.getAcross([...refs.values()]);
  const writes: KvWrite[] = [];
  /** Per record write: the index of its versioned write in `writes`, and the meta it wrote. */
  const puts: Array<{ at: number; meta: RecordMeta }> = [];
  const tenants = new Set<string>();
  /**
   * Writes `meta` unless a newer version is stored, and the version it is (as `cause` made it)
   * in the record's history — or, for a purge, removes that history: it goes with the content.
   */
  const put = (meta: RecordMeta, cause: MemoryEvent) => {
    const stored = current.get(recordRef(meta.tenantId, meta.id));
    // What setIfVersionAtLeast would refuse: the record hash already holds a newer version.
    if (stored !== undefined && stored.version > meta.version) return;
    current.set(recordRef(meta.tenantId, meta.id), meta);
    puts.push({ at: writes.length, meta });
    const history = cause.type === 'MemoryPurged'
      ? state.history.removeWrite(meta.tenantId, meta.id, meta.version)
      : state.history.putWrite(meta.tenantId, versionOf(meta, cause));
    // The subject's index is left under the subject the stored record named (a purge erases it, §8.4).
    writes.push(...state.records.putWrites(meta, stored?.subjectId), history);
    tenants.add(meta.tenantId);
  };
  /** The record's status after the event, as the domain's one transition table has it (§3). */
  const move = (tenant: string, cause: MemoryEvent) => {
    for (const t of recordTransitions(cause)) {
      const stored = current.get(recordRef(tenant, t.id));
      if (stored !== undefined && movesFrom(t, stored.status)) put(transitioned(stored, t), cause);
    }
  };
  for (const event of events) {
    const tenant = event.metadata.tenantId;
    switch (event.type) {
      case 'MemoryWritten': {
        const { content, ...meta } = event.data.record;
        writes.push(state.idClaims.claimWrite(tenant, meta.id, meta.subjectId));
        const stored = current.get(recordRef(tenant, meta.id));
        if (stored !== undefined && stored.version > meta.version) break;
        writes.push(state.contents.putWrite(tenant, meta.id, content));
        put(meta, event);
        break;
      }
      case 'MemoryRevocationRequested':
      case 'SubjectForgotten':
        // Tombstone first: the read path denies from here on, before any purge work (§3).
        writes.push(...state.tombstones.addWrites(tenant, recordTransitions(event).map((t) => t.id)));
        move(tenant, event);
        break;
      case 'MemoryTombstoned':
        writes.push(...state.tombstones.addWrites(tenant, [event.data.id]));
        // A rejected quarantine never becomes a deletion job: its only copy goes now.
        if (event.data.reason === 'rejected') writes.push(state.contents.removeWrite(tenant, [event.data.id]));
        move(tenant, event);
        break;
      case 'MemoryPurged':
        // The deletion job already removed the content; removing again keeps replay identical.
        // The record hash keeps that the id was purged (ids are never reused), not its content's hash (§8.4);
        // its claim keeps the id taken without naming the subject, which also leaves the subject's index.
        writes.push(state.contents.removeWrite(tenant, [event.data.id]), state.idClaims.retireWrite(tenant, event.data.id));
        move(tenant, event);
        break;
      default:
        move(tenant, event);
    }
  }
  // The data generation of every tenant whose records changed, after the changes (search caches key on it).
  for (const tenant of tenants) writes.push(state.generations.bumpWrite(tenant));
  const results = await state.kv.pipeline(writes);
  return puts.filter((p) => results[p.at] === true).map((p) => p.meta);
}

/** The version `meta` is, as the history keeps it: when, by whom and through which event, without the content's hash. */
function versionOf(meta: RecordMeta, event: MemoryEvent): StoredRecordVersion {
  const { contentHash: _hash, ...record } = meta;
  const { agentId, principalId, principalKind } = event.metadata.actor;
  const rejection = event.type === 'MemoryTombstoned' && event.data.reason === 'rejected'
    ? { rejection: event.data.rejectionReason === undefined ? {} : { reason: event.data.rejectionReason } }
    : {};
  return { event: event.type, at: event.metadata.now, by: { agentId, principalId, principalKind }, record, ...rejection };
}

/**
 * A record's state as memory.records carries it: without the content, its hash, or what names
 * its sources (provenance keeps its kinds and times). The topic is compacted, not sealed, so a
 * hash or a source's uri on it would outlive the record's keys until compaction; nothing that
 * reads record state needs them (the state store keeps them for the copies a deletion takes,
 * the summaries' check and the read path, and erases them at the purge: design §8.5).
 */
export function publishedState(meta: RecordMeta): Omit<RecordMeta, 'contentHash'> {
  const { contentHash: _hash, ...state } = meta;
  return { ...state, provenance: erasedProvenance(state.provenance) };
}


export async function startProjector(deps: ProjectorDeps): Promise<ServiceHandle> {
  return subscribeToMemoryEventBatches(deps.bus, PROJECTOR_GROUP, async (batch, ctx) => {
    const changed = await projectEvents(deps.state, batch.map((b) => b.event));
    ctx.send(changed.map((meta) => ({ topic: TOPICS.records, key: `${meta.tenantId}/${meta.id}`, value: publishedState(meta) })));
  });
}
