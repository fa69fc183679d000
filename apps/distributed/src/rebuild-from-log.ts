/**
 * The distributed runtime's projections rebuilt from the log (design §4, docs/reliability.md
 * "Rebuilding from the log"): the same fold as `memctl replay` (@gm/embedded
 * rebuildProjections), on the deployment's Redis and Elasticsearch, then the consumer groups
 * that write those projections handed over at exactly the offsets the fold read through.
 */
import { groupsWithMembers, type GroupMembers } from '@gm/bus';
import { openIndex, openSealedBus, openState, openSummaries, openVectors } from '@gm/adapters';
import { DistributedEnv, WithElasticsearch, WithMasterKeys, WithRedis, WithSemantic } from '@gm/config';
import { CONSUMER_GROUPS, TOPICS } from '@gm/contracts';
import { restoreDeletionJobs, type RestoreReport } from '@gm/deletion-orchestrator';
import { deletionEnvShape, deletionTargetsFrom, deletionTargetsShape } from '@gm/deletion-orchestrator/env';
import { rebuildProjections, type RebuildReport } from '@gm/embedded';
import { DEFAULT_MODEL_DIR, modelOfDir } from '@gm/embedding';
import type { z } from 'zod';

/**
 * The services' variables the rebuild reads (docs/distributed.md): the engines, the namespace,
 * the master keys, and the deletion-orchestrator's settings the restored jobs are folded with.
 */
export const RebuildEnv = DistributedEnv.extend({
  ...WithRedis.shape, ...WithElasticsearch.shape, ...WithMasterKeys.shape, ...WithSemantic.shape, ...deletionEnvShape, ...deletionTargetsShape,
});
export type RebuildEnv = z.infer<typeof RebuildEnv>;

/**
 * The groups whose members write what the rebuild writes: the projections (and the deletion
 * targets that erase from them), the deletion jobs and the receipts. None may run.
 */
export const REBUILT_STATE_WRITER_GROUPS = [
  CONSUMER_GROUPS.projector, CONSUMER_GROUPS.policyProjector, CONSUMER_GROUPS.indexBuilder, CONSUMER_GROUPS.summaryBuilder,
  CONSUMER_GROUPS.vectorIndexer, CONSUMER_GROUPS.expiryScheduler, CONSUMER_GROUPS.primaryTarget, CONSUMER_GROUPS.indexTargets,
  CONSUMER_GROUPS.vectorTargets, CONSUMER_GROUPS.deletionOrchestrator, CONSUMER_GROUPS.receiptVerifier, CONSUMER_GROUPS.receiptSigner,
] as const;

/** Where each folding group continues after the rebuild: the topic it folds. The vector-indexer's group is reset instead (it re-embeds). */
const HAND_OFF = [
  { group: CONSUMER_GROUPS.projector, topic: TOPICS.events },
  { group: CONSUMER_GROUPS.indexBuilder, topic: TOPICS.events },
  { group: CONSUMER_GROUPS.summaryBuilder, topic: TOPICS.events },
  { group: CONSUMER_GROUPS.expiryScheduler, topic: TOPICS.events },
  { group: CONSUMER_GROUPS.policyProjector, topic: TOPICS.policyChanges },
] as const;

/** Services are running: rebuilding under them would interleave two folds in the same keys. */
export class ServicesRunningError extends Error {
  constructor(readonly groups: readonly GroupMembers[]) {
    super(
      `consumer groups that write the projections have active members: ${groups.map((g) => `${g.groupId} (${g.members}, ${g.state})`).join(', ')}; `
      + 'stop the services (every instance of projector, index-builder, vector-indexer, expiry-scheduler, deletion-orchestrator, receipt-verifier) and run the rebuild again',
    );
    this.name = 'ServicesRunningError';
  }
}

/** The projections' rebuild, and the deletion jobs and receipts the job store lacked, folded back from the log. */
export type DistributedRebuildReport = RebuildReport & { deletionJobs: RestoreReport };

export async function rebuildFromLog(env: RebuildEnv, onProgress: (events: number) => void = () => undefined): Promise<DistributedRebuildReport> {
  const topicPrefix = env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}.` : '';
  const running = await groupsWithMembers({ brokers: env.KAFKA_BROKERS, topicPrefix }, REBUILT_STATE_WRITER_GROUPS);
  if (running.length > 0) throw new ServicesRunningError(running);
  const sealed = await openSealedBus(env, 'gm-rebuild', 'open');
  const state = openState(env);
  const index = openIndex(env);
  const summaries = openSummaries(env);
  // The vector index keeps its mapping's dimensions: the model the vector-indexer will embed with.
  const vectors = env.MEMORY_SEMANTIC === 'off' ? undefined : openVectors(env, modelOfDir(env.MEMORY_EMBEDDING_MODEL_DIR ?? DEFAULT_MODEL_DIR).dimensions);
  try {
    const report = await rebuildProjections({ state, index, summaries, ...(vectors ? { vectors } : {}) }, sealed.bus, onProgress);
    // The groups continue exactly after what the fold read: nothing folded twice, and nothing
    // appended meanwhile skipped. Left where they were, a group that had stopped behind the log
    // would fold its tail a second time over the rebuilt state, and a group without offsets
    // (reset, or expired by Kafka after a long stop) the whole log: survivable, as any
    // redelivery is, but work the rebuild has just done, and under a stale read-your-writes
    // wait meanwhile (the broker waits on these groups' offsets).
    for (const { group, topic } of HAND_OFF) {
      await sealed.raw.setCommittedOffsets(group, topic, topic === TOPICS.events ? report.through.events : report.through.policyChanges);
    }
    // Jobs are not projections (a job store that kept them keeps them), but a lost one would never
    // finish: folded back, an open one is resumed by the orchestrator at its start.
    const deletionJobs = await restoreDeletionJobs(state, sealed.bus, {
      targets: deletionTargetsFrom(env), deadlineMs: env.MEMORY_DELETION_DEADLINE, verifyRetryMs: env.MEMORY_DELETION_VERIFY_RETRY,
    });
    return { ...report, deletionJobs };
  } finally {
    await sealed.close();
    await Promise.all([state.kv.close(), index.close(), summaries.close(), vectors?.close()]);
  }
}
