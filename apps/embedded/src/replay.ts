import { MemoryEvent, TOPICS, type Clock } from '@gm/contracts';
import { indexEvent } from '@gm/index-builder';
import { projectEvent } from '@gm/projector';
import { scheduleFromEvent } from '@gm/expiry-scheduler';
import { lockDataDir } from './lock.ts';
import { openStores, systemClock } from './runtime.ts';

/** Projection keys that a replay rebuilds; jobs, packets and caches are not projections. */
const PROJECTION_PREFIXES = ['rec:', 'content:', 'tomb:', 'claim:', 'subj:', 'quar:', 'expiry', 'gen:'];

export interface ReplayReport {
  events: number;
  before: { projection: string; index: string };
  after: { projection: string; index: string };
  identical: boolean;
}

/**
 * Rebuilds the record hash, content copies, tombstones, schedule and search index from
 * memory.events alone and compares digests with what was there. The service must be stopped.
 */
export async function replayDataDir(
  dataDir: string, partitions: number, onProgress: (events: number) => void = () => undefined, clock: Clock = systemClock,
): Promise<ReplayReport> {
  const unlock = lockDataDir(dataDir);
  const stores = await openStores(dataDir, partitions, clock);
  try {
    const { bus, index, state } = stores;
    const digest = async () => ({ projection: await state.projectionDigest(), index: await index.digest() });
    const before = await digest();
    await index.clear();
    for (const prefix of PROJECTION_PREFIXES) {
      const keys = await state.kv.keys(`${state.keys.prefix}${prefix}`);
      if (keys.length > 0) await state.kv.del(keys);
    }
    let events = 0;
    for await (const message of bus.readAll(TOPICS.events)) {
      const parsed = MemoryEvent.safeParse(message.value);
      if (!parsed.success) continue;
      await projectEvent(state, parsed.data);
      await indexEvent(index, parsed.data);
      await scheduleFromEvent(state, parsed.data);
      events += 1;
      if (events % 1000 === 0) onProgress(events);
    }
    const after = await digest();
    return { events, before, after, identical: before.projection === after.projection && before.index === after.index };
  } finally {
    await stores.close();
    unlock();
  }
}
