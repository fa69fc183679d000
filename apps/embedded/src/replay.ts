import type { Clock } from '@gm/contracts';
import { lockDataDir } from './lock.ts';
import { systemClock } from '@gm/time';
import { openStores, type MasterKeyEnv } from './stores.ts';
import { rebuildProjections, type RebuildReport, type WereEmpty } from './rebuild-projections.ts';

export { PROJECTION_PREFIXES, RECORD_PROJECTION_PREFIXES, rebuildProjections, type Digests, type ProjectionStores, type RebuildReport, type WereEmpty } from './rebuild-projections.ts';

/** What `memctl replay` reports: the digests compared (the data directory's lock keeps the services off). */
export type ReplayReport = Omit<RebuildReport, 'through' | 'wereEmpty'>;

/**
 * Rebuilds the record hash, content copies, tombstones, schedule, search index and summaries from
 * memory.events, and the policy data (grants, delegations, revocations, legal holds,
 * revisions) from policy.changes, and compares digests with what was there. The service
 * must be stopped. The vectors are dropped and the vector-indexer's group reset, so the next
 * start embeds them again from the log (embedding takes the model, which the service loads).
 */
export async function replayDataDir(
  dataDir: string, partitions: number, onProgress: (events: number) => void = () => undefined, clock: Clock = systemClock,
  masterKeyEnv: MasterKeyEnv = {}, options: { locked?: boolean } = {},
): Promise<ReplayReport> {
  // `locked`: the caller holds the directory's lock already (a start migrating its key layout).
  const unlock = options.locked === true ? () => undefined : lockDataDir(dataDir);
  const stores = await openStores(dataDir, partitions, clock, masterKeyEnv);
  try {
    const { events, policyChanges, before, after, identical } = await rebuildProjections(
      stores, stores.crypto.view(stores.bus, 'open'), onProgress,
    );
    return { events, policyChanges, before, after, identical };
  } finally {
    await stores.close();
    unlock();
  }
}
