import type { Bus } from '@gm/bus';
import { subscribeToMemoryEvents } from '@gm/service-kit';
import { TOPICS, type MemoryEvent, type RecordMeta, type ServiceHandle } from '@gm/contracts';
import type { Logger } from '@gm/observability';
import type { StateStore } from '@gm/state-store';

export const PROJECTOR_GROUP = 'projector';

export interface ProjectorDeps {
  bus: Bus;
  state: StateStore;
  log: Logger;
}

/**
 * Folds memory.events into the record hash (metadata only), the primary content copy, the
 * tombstones and memory.records (compacted). Idempotent: the record hash is version-guarded,
 * so a redelivered event changes nothing.
 */
export async function projectEvent(state: StateStore, event: MemoryEvent): Promise<RecordMeta[]> {
  const tenant = event.metadata.tenantId;
  const changed: RecordMeta[] = [];
  const patch = async (id: string, fields: Partial<RecordMeta>) => {
    const current = await state.records.get(tenant, id);
    if (!current) return;
    const next = { ...current, ...fields };
    if (await state.records.put(next)) changed.push(next);
  };
  switch (event.type) {
    case 'MemoryWritten': {
      const { content, ...meta } = event.data.record;
      await state.idClaims.claim(tenant, meta.id, meta.subjectId);
      const current = await state.records.get(tenant, meta.id);
      if (current && current.version > meta.version) break;
      await state.contents.put(tenant, meta.id, content);
      if (await state.records.put(meta)) changed.push(meta);
      break;
    }
    case 'MemoryPromoted':
      await patch(event.data.id, event.data.record);
      break;
    case 'MemorySuperseded':
      await patch(event.data.id, { status: 'superseded', version: event.data.version, supersededById: event.data.supersededById });
      break;
    case 'MemoryExpired':
      await patch(event.data.id, { status: 'expired', version: event.data.version });
      break;
    case 'MemoryRevocationRequested':
      // Tombstone first: the read path denies from here on, before any purge work (§3).
      await state.tombstones.add(tenant, [event.data.id]);
      await patch(event.data.id, { status: event.data.alreadyTombstoned ? 'tombstoned' : 'revocation_pending', version: event.data.version });
      break;
    case 'SubjectForgotten':
      await state.tombstones.add(tenant, event.data.records.map((r) => r.id));
      for (const r of event.data.records) {
        await patch(r.id, { status: r.alreadyTombstoned ? 'tombstoned' : 'revocation_pending', version: r.version });
      }
      break;
    case 'MemoryTombstoned':
      await state.tombstones.add(tenant, [event.data.id]);
      // A rejected quarantine never becomes a deletion job: its only copy goes now.
      if (event.data.reason === 'rejected') await state.contents.remove(tenant, [event.data.id]);
      await patch(event.data.id, { status: 'tombstoned', version: event.data.version });
      break;
    case 'MemoryPurged':
      // The deletion job already removed the content; removing again keeps replay identical.
      await state.contents.remove(tenant, [event.data.id]);
      await patch(event.data.id, { status: 'purged', version: event.data.version });
      break;
    default: {
      const never: never = event;
      throw new Error(`unhandled event ${JSON.stringify(never)}`);
    }
  }
  if (changed.length > 0) await state.generations.bump(tenant);
  return changed;
}

export async function startProjector(deps: ProjectorDeps): Promise<ServiceHandle> {
  return subscribeToMemoryEvents(deps.bus, PROJECTOR_GROUP, async (event, _message, ctx) => {
    const changed = await projectEvent(deps.state, event);
    ctx.send(changed.map((meta) => ({ topic: TOPICS.records, key: `${meta.tenantId}/${meta.id}`, value: meta })));
  });
}
