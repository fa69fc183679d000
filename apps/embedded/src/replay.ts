import { CONSUMER_GROUPS, PolicyChange, TOPICS, readMemoryEvent, type Clock } from '@gm/contracts';
import { indexEvent, summarizeEvent } from '@gm/index-builder';
import { projectEvent } from '@gm/projector';
import { scheduleFromEvent } from '@gm/expiry-scheduler';
import { lockDataDir } from './lock.ts';
import { systemClock } from '@gm/time';
import { openStores, type MasterKeyEnv } from './stores.ts';

/**
 * Projection keys that a replay rebuilds; jobs, packets, caches and the issuer's record of
 * signed capabilities are not projections. Policy data (`pol:`), revisions (`rev:`) and
 * revocations (`revoked:`) are folded from policy.changes.
 */
const PROJECTION_PREFIXES = ['rec:', 'hist:', 'content:', 'tomb:', 'claim:', 'subj:', 'quar:', 'expiry', 'gen:', 'pol:', 'rev:', 'revoked:'];

/** The record projections alone (the projector's fold of memory.events), for a replay of those only. */
export const RECORD_PROJECTION_PREFIXES = ['rec:', 'content:', 'tomb:', 'claim:', 'subj:', 'quar:', 'gen:'];

/** `summaries` leaves updatedAt out: a replay rebuilds the same summaries at other times. */
export type Digests = { projection: string; index: string; summaries: string };

export interface ReplayReport {
  events: number;
  policyChanges: number;
  before: Digests;
  after: Digests;
  identical: boolean;
}

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
    const { index, summaries, state } = stores;
    // The projections are folds of the opened log: a destroyed key reads as erased content.
    const bus = stores.crypto.view(stores.bus, 'open');
    const digest = async (): Promise<Digests> => ({
      projection: await state.projectionDigest(), index: await index.digest(), summaries: await summaries.digest(),
    });
    const before = await digest();
    await index.clear();
    await summaries.clear();
    await stores.vectors.clear();
    await stores.bus.resetGroup(CONSUMER_GROUPS.vectorIndexer);
    for (const prefix of PROJECTION_PREFIXES) {
      const keys = await state.kv.keys(`${state.keys.prefix}${prefix}`);
      if (keys.length > 0) await state.kv.del(keys);
    }
    // Policy first: it is independent of the records, and the same fold the policy projector runs.
    let policyChanges = 0;
    for await (const message of bus.readAll(TOPICS.policyChanges)) {
      const parsed = PolicyChange.safeParse(message.value);
      if (!parsed.success || message.key !== parsed.data.metadata.tenant) continue; // dead-lettered when consumed
      await state.policies.apply(parsed.data);
      policyChanges += 1;
    }
    let events = 0;
    for await (const message of bus.readAll(TOPICS.events)) {
      const event = readMemoryEvent(message);
      await projectEvent(state, event);
      await indexEvent(index, event);
      await summarizeEvent({ index, summaries, state }, event);
      await scheduleFromEvent(state, event);
      events += 1;
      if (events % 1000 === 0) onProgress(events);
    }
    const after = await digest();
    return { events, policyChanges, before, after, identical: before.projection === after.projection && before.index === after.index && before.summaries === after.summaries };
  } finally {
    await stores.close();
    unlock();
  }
}
