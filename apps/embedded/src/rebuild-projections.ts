/**
 * The projections as folds of the log (design §4), on any adapters: the same code rebuilds the
 * embedded runtime's files (`memctl replay`) and the distributed runtime's Redis keys and
 * Elasticsearch indices (`pnpm rebuild:distributed`). Ports in, a report out; opening and
 * closing the stores, and who may run it when, are the callers'.
 */
import { createHash } from 'node:crypto';
import type { Bus, ConsumedMessage } from '@gm/bus';
import { CONSUMER_GROUPS, PolicyChange, TOPICS, readMemoryEvent, type MemoryEvent } from '@gm/contracts';
import { scheduleFromEvents } from '@gm/expiry-scheduler';
import { indexEvents, summarizeEvents } from '@gm/index-builder';
import { projectEvents } from '@gm/projector';
import type { SearchIndex, SummaryStore, VectorIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';

/**
 * Projection keys that a rebuild replaces; jobs, packets, caches and the issuer's record of
 * signed capabilities are not projections. Policy data (`pol:`), revisions (`rev:`) and
 * revocations (`revoked:`) are folded from policy.changes.
 */
export const PROJECTION_PREFIXES = ['rec:', 'hist:', 'content:', 'tomb:', 'claim:', 'subj:', 'quar:', 'expiry', 'gen:', 'pol:', 'rev:', 'revoked:'];

/** The record projections alone (the projector's fold of memory.events), for a replay of those only. */
export const RECORD_PROJECTION_PREFIXES = ['rec:', 'content:', 'tomb:', 'claim:', 'subj:', 'quar:', 'gen:'];

/** Events of one partition folded together by a rebuild (the services' batches are of this order). */
const REBUILD_CHUNK_EVENTS = 500;

/** `summaries` leaves updatedAt out: a rebuild makes the same summaries at other times. */
export type Digests = { projection: string; index: string; summaries: string };

/** Which stores held nothing before the rebuild (lost, or never written): restored, not compared. */
export type WereEmpty = Record<keyof Digests, boolean>;

/** What the index and the summary digests are over no documents (sha256 of no lines). */
const EMPTY_DIGEST = createHash('sha256').update('').digest('hex');

/** The next offset per partition (index = partition) up to which a rebuild folded each topic. */
export interface FoldedThrough {
  events: number[];
  policyChanges: number[];
}

export interface RebuildReport {
  events: number;
  policyChanges: number;
  before: Digests;
  after: Digests;
  identical: boolean;
  wereEmpty: WereEmpty;
  /** Where the consumer groups that write these projections take over. */
  through: FoldedThrough;
}

export interface ProjectionStores {
  state: StateStore;
  index: SearchIndex;
  summaries: SummaryStore;
  /** Dropped, and the vector-indexer's group reset: its next start embeds from the log again (it holds the model). Absent: a deployment without vectors. */
  vectors?: VectorIndex;
}

/**
 * Replaces the record hash, history, content copies, tombstones, claims, schedule, search index
 * and summaries with the fold of memory.events, and the policy data (grants, delegations,
 * revocations, legal holds, revisions) with the fold of policy.changes, and compares digests
 * with what was there. `log` is the log opened (`crypto.view(bus, 'open')`): a destroyed key
 * reads as erased content, as it does for the services. Nothing that writes these stores may
 * run meanwhile.
 */
export async function rebuildProjections(
  stores: ProjectionStores, log: Bus, onProgress: (events: number) => void = () => undefined,
): Promise<RebuildReport> {
  const { state, index, summaries } = stores;
  const digest = async (): Promise<Digests> => ({
    projection: await state.projectionDigest(), index: await index.digest(), summaries: await summaries.digest(),
  });
  const before = await digest();
  await index.clear();
  await summaries.clear();
  if (stores.vectors !== undefined) {
    await stores.vectors.clear();
    await log.resetGroup(CONSUMER_GROUPS.vectorIndexer);
  }
  // Closed while the policy projection is replaced: no decision rests on a partial fold.
  await state.policyProjection.unmark();
  let projectionKeys = 0;
  for (const prefix of PROJECTION_PREFIXES) {
    const keys = await state.kv.keys(`${state.keys.prefix}${prefix}`);
    projectionKeys += keys.length;
    if (keys.length > 0) await state.kv.del(keys);
  }
  const wereEmpty = { projection: projectionKeys === 0, index: before.index === EMPTY_DIGEST, summaries: before.summaries === EMPTY_DIGEST };
  // Policy first: it is independent of the records, and the same fold the policy projector runs.
  let policyChanges = 0;
  const policyThrough = await log.endOffsets(TOPICS.policyChanges);
  for await (const message of readThrough(log, TOPICS.policyChanges, policyThrough)) {
    const parsed = PolicyChange.safeParse(message.value);
    if (!parsed.success || message.key !== parsed.data.metadata.tenant) continue; // dead-lettered when consumed
    await state.policies.apply(parsed.data);
    policyChanges += 1;
  }
  await state.policyProjection.mark();
  let events = 0;
  const eventsThrough = await log.endOffsets(TOPICS.events);
  // Folded a partition's chunk at a time, as the services fold their batches: one pass of each
  // fold per chunk (a Redis pipeline, one _bulk) instead of several round trips per event, which
  // took minutes for a few thousand events on the cluster. The folds are the services' own and
  // give the same state whatever the batch boundaries.
  let chunk: MemoryEvent[] = [];
  let chunkPartition = -1;
  const fold = async () => {
    if (chunk.length === 0) return;
    await projectEvents(state, chunk);
    await indexEvents(index, chunk);
    await summarizeEvents({ index, summaries, state }, chunk);
    await scheduleFromEvents(state, chunk);
    const before = events;
    events += chunk.length;
    chunk = [];
    if (Math.floor(events / 1000) > Math.floor(before / 1000)) onProgress(events);
  };
  for await (const message of readThrough(log, TOPICS.events, eventsThrough)) {
    if (message.partition !== chunkPartition || chunk.length >= REBUILD_CHUNK_EVENTS) await fold();
    chunkPartition = message.partition;
    chunk.push(readMemoryEvent(message));
  }
  await fold();
  const after = await digest();
  return {
    events, policyChanges, before, after,
    identical: before.projection === after.projection && before.index === after.index && before.summaries === after.summaries,
    wereEmpty,
    through: { events: eventsThrough, policyChanges: policyThrough },
  };
}

/**
 * Every message of a topic below the ends captured before reading, partition by partition in
 * offset order (what `readAll` yields on a log nobody appends to). Fixing the ends first makes
 * the rebuild's hand-off exact: whatever is appended meanwhile is left to the services.
 */
async function* readThrough(log: Bus, topic: string, ends: readonly number[]): AsyncIterable<ConsumedMessage> {
  for (const [partition, end] of ends.entries()) {
    if (end === 0) continue;
    for await (const message of log.readPartition(topic, partition, 0)) {
      // The reader stops at an end it captures itself, a moment later: what was appended in between is the services'.
      if (message.offset < end) yield message;
    }
  }
}
