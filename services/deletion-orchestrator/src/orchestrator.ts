import type { Bus, ConsumedMessage, OutgoingMessage, ProcessContext } from '@gm/bus';
import {
  CONSUMER_GROUPS, DeletionAck, PolicyChange, TOPICS, dlqTopic, readMemoryEvent, serviceActor, subjectKey,
  type Clock, type DeletionJob, type DeletionTarget, type DeletionTask, type MemoryCommand, type ServiceHandle,
} from '@gm/contracts';
import {
  decideDeletion, foldDeletion, mayBeHeld, receiptAskDue, retainsPrimary,
  type DeletionFact, type DeletionInput, type DeletionRequest, type DeletionSettings, type DeletionWork, type HoldNow,
} from '@gm/domain';
import { derivedId } from '@gm/ids';
import type { Logger, Metrics } from '@gm/observability';
import { periodic } from '@gm/time';
import { deletionInputOfAck, deletionRequestOf, isTargetAck } from './deletion-inputs.ts';
import type { StateStore } from '@gm/state-store';

export const ORCHESTRATOR_GROUP = CONSUMER_GROUPS.deletionOrchestrator;

export interface OrchestratorDeps {
  bus: Bus;
  state: StateStore;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** The copies this deployment keeps; each one must acknowledge. */
  targets: DeletionTarget[];
  deadlineMs: number;
  verifyRetryMs: number;
  tickMs: number;
  /** A job with no progress for this long re-sends what its state still needs (default 2 s). */
  resendAfterMs?: number;
}

/**
 * Turns revocation, deletion and forget events into durable jobs (§8). The rules live in the
 * domain's deletion decider; this shell loads a job, reads the subject's legal hold when it could
 * still matter, decides, saves the folded job and sends the decided work. A job that misses its
 * deadline fails loudly (metric, log, dead letter) — never a silent success.
 */
export class DeletionOrchestrator {
  private readonly locks = new Map<string, Promise<void>>();
  /** When this process last asked for a job's missing receipt (epoch ms). */
  private readonly receiptAsked = new Map<string, number>();
  private readonly settings: DeletionSettings;

  constructor(private readonly deps: OrchestratorDeps) {
    this.settings = {
      targets: deps.targets, deadlineMs: deps.deadlineMs, verifyRetryMs: deps.verifyRetryMs, resendAfterMs: deps.resendAfterMs ?? 2_000,
    };
  }

  /** Serialises work on one job: events and acks of a job may arrive on different partitions. */
  private async withJob(jobId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.locks.get(jobId) ?? Promise.resolve();
    const next = previous.then(work, work);
    this.locks.set(jobId, next.catch(() => undefined));
    try {
      await next;
    } finally {
      if (this.locks.get(jobId) === next) this.locks.delete(jobId);
    }
  }

  handle = async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    if (message.topic === TOPICS.deletionAcks) return this.onAck(DeletionAck.parse(message.value), ctx);
    if (message.topic === TOPICS.policyChanges) return this.onPolicyChange(PolicyChange.parse(message.value), ctx);
    const event = readMemoryEvent(message);
    const request = deletionRequestOf(event);
    if (request !== undefined) return this.request(request, ctx);
    if (event.type !== 'MemoryTombstoned' || event.data.jobId === undefined) return;
    const { jobId, id } = event.data;
    return this.step(event.metadata.tenantId, jobId, async (job) => ({
      type: 'RecordTombstoned', now: this.now(), recordId: id, hold: await this.holdFor(job),
    }), ctx);
  };

  private now(): string {
    return this.deps.clock.now().toISOString();
  }

  /** The subject's legal hold, read only while one could still change what the job does. */
  private async holdFor(job: Pick<DeletionJob, 'tenant' | 'subjectId' | 'mode' | 'legalHold'> | undefined): Promise<HoldNow> {
    if (job === undefined || !mayBeHeld(job)) return null;
    const hold = await this.deps.state.policies.holdOf(job.tenant, job.subjectId);
    return hold === null ? null : { holdId: hold.holdId, reason: hold.reason };
  }

  private request(request: DeletionRequest, ctx: ProcessContext): Promise<void> {
    return this.step(request.tenant, request.jobId, async (job) => ({
      // A subject on legal hold: tombstone and remove every derived copy, but keep the primary content.
      type: 'RequestDeletion', now: this.now(), request,
      hold: job === undefined ? await this.holdFor({ tenant: request.tenant, subjectId: request.subjectId, mode: request.mode }) : null,
    }), ctx);
  }

  private async onAck(ack: DeletionAck, ctx: ProcessContext): Promise<void> {
    if (!isTargetAck(ack)) return;
    return this.step(ack.tenantId, ack.jobId, async (job) => deletionInputOfAck(ack, this.now(), await this.holdFor(job)), ctx);
  }

  /**
   * A released legal hold: every job that kept content for it gets a job that purges what it
   * kept, unless another hold of the subject still applies — then the new job keeps it for that one.
   */
  private async onPolicyChange(change: PolicyChange, ctx: ProcessContext): Promise<void> {
    if (change.type !== 'LegalHoldReleased') return;
    const { tenant } = change.metadata;
    const { holdId } = change.data;
    // The policy projector drops the hold as well; dropping it here first means no step of the
    // jobs below can read the released hold back from a projection that lags.
    await this.deps.state.policies.apply(change);
    for (const held of await this.deps.state.jobs.heldBy(tenant, holdId)) {
      const jobId = derivedId('release', held.jobId, holdId);
      await this.step(tenant, jobId, async (job) => ({
        type: 'ContinueAfterRelease', now: this.now(), jobId, held, holdId,
        requestedBy: change.metadata.requestedBy, requestedAt: change.metadata.occurredAt,
        hold: job === undefined ? await this.holdFor({ tenant, subjectId: held.subjectId, mode: held.mode }) : null,
      }), ctx);
      // The kept job points to the one that purges for it (GET /v1/deletion-jobs/{id} shows the way).
      await this.step(tenant, held.jobId, () => Promise.resolve({ type: 'MarkContinued', by: jobId }), ctx);
      await this.deps.state.jobs.releasedFrom(tenant, holdId, held.jobId);
    }
  }

  /**
   * load → decide → persist → send, under the job's lock. A finished job expects its receipt
   * before it is saved, so a crash in between still leaves the receipt asked for (`tick`).
   */
  private step(
    tenant: string, jobId: string, inputFor: (job: DeletionJob | undefined) => Promise<DeletionInput>,
    ctx: ProcessContext | 'produce',
  ): Promise<void> {
    return this.withJob(jobId, async () => {
      const job = (await this.deps.state.jobs.get(tenant, jobId)) ?? undefined;
      const { facts, work } = decideDeletion(await inputFor(job), job, this.settings);
      const next = foldDeletion(facts, job);
      if (next === undefined) return;
      if (facts.some((f) => f.type === 'JobVerified' || f.type === 'JobFailed')) await this.deps.state.receipts.expect(next.tenant, next.jobId);
      if (facts.length > 0) await this.deps.state.jobs.put(next);
      const messages = work.map((w) => this.message(next, w));
      // Counted and logged as soon as the job shows its new status, before the sends.
      this.observe(job, next, facts, messages.length);
      if (messages.length === 0) return;
      if (ctx === 'produce') await this.deps.bus.produce(messages);
      else ctx.send(messages);
    });
  }

  /** Metrics and logs of a decision: ids, statuses and counts, never content. */
  private observe(before: DeletionJob | undefined, job: DeletionJob, facts: readonly DeletionFact[], messages: number): void {
    const { log, metrics } = this.deps;
    const ids = { jobId: job.jobId, tenant: job.tenant };
    for (const fact of facts) {
      switch (fact.type) {
        case 'JobOpened':
          if (fact.job.continues) {
            log.info({ ...ids, continues: fact.job.continues.jobId, releasedHold: fact.job.continues.holdId, records: job.recordIds.length, legalHold: job.legalHold?.holdId }, 'deletion job opened for a released legal hold');
          } else {
            log.info({ ...ids, records: job.recordIds.length, mode: job.mode, legalHold: job.legalHold?.holdId }, 'deletion job opened');
          }
          break;
        case 'HoldSeen':
          log.info({ ...ids, legalHold: fact.hold.holdId, status: before?.status ?? job.status }, 'legal hold placed during the deletion job: its content is kept');
          break;
        case 'JobVerified':
          metrics.deletionJobs.inc({ status: 'verified' });
          metrics.receiptLatency.observe(Math.max(0, Date.parse(fact.at) - Date.parse(job.requestedAt)) / 1000);
          log.info({ ...ids, attempts: job.progress.verificationAttempts }, 'deletion job verified');
          break;
        case 'JobFailed':
          metrics.deletionJobs.inc({ status: 'failed' });
          metrics.deletionAlerts.inc({ reason: fact.cause });
          log.error({ ...ids, status: fact.while, reason: fact.reason }, 'ALERT deletion job failed');
          break;
        case 'JobResumed':
          log.warn({ jobId: job.jobId, status: job.status, messages }, 'stalled deletion job resumed');
          break;
        default:
          break;
      }
    }
  }

  /** Timer work: fail jobs past their deadline, re-run verification, resume stalled jobs, re-ask missing receipts. */
  async tick(): Promise<void> {
    await this.askMissingReceipts(this.deps.clock.now());
    for (const open of await this.deps.state.jobs.open()) {
      await this.step(open.tenant, open.jobId, () => Promise.resolve({ type: 'TimePassed', now: this.now() }), 'produce');
    }
  }

  /**
   * A finished job whose receipt is not stored yet (the process died between saving the job and
   * committing its `receipt` task, or the receipt-verifier is behind) is asked again.
   */
  private async askMissingReceipts(now: Date): Promise<void> {
    for (const { tenant, jobId } of await this.deps.state.receipts.pending()) {
      const job = await this.deps.state.jobs.get(tenant, jobId);
      if (!job || !receiptAskDue(job, this.receiptAsked.get(jobId), now.getTime(), this.settings.resendAfterMs)) continue;
      if (await this.deps.state.receipts.get(tenant, jobId)) continue;
      this.receiptAsked.set(jobId, now.getTime());
      await this.deps.bus.produce([this.message(job, { type: 'Task', target: 'receipt' })]);
      this.deps.log.warn({ jobId, tenant, status: job.status }, 'deletion receipt asked again');
    }
    if (this.receiptAsked.size > 10_000) this.receiptAsked.clear();
  }

  /** A decision's work as a message, built from the job as the decision left it. */
  private message(job: DeletionJob, work: DeletionWork): OutgoingMessage {
    switch (work.type) {
      case 'Task': {
        const task: DeletionTask = {
          jobId: job.jobId, tenantId: job.tenant, target: work.target, recordIds: job.recordIds,
          retainPrimary: retainsPrimary(job), issuedAt: this.now(),
        };
        return { topic: TOPICS.deletionTasks, key: job.jobId, value: task };
      }
      case 'DeadLetter':
        return {
          topic: dlqTopic(TOPICS.deletionTasks),
          key: job.jobId,
          value: { jobId: job.jobId, tenant: job.tenant, status: work.while, reason: work.reason, recordIds: job.recordIds },
          headers: { 'dlq.topic': TOPICS.deletionTasks, 'dlq.error': work.reason, 'dlq.group': ORCHESTRATOR_GROUP },
        };
      case 'TombstoneMemory':
      case 'PurgeMemory': {
        const command: MemoryCommand = {
          type: work.type,
          data: { id: work.recordId, jobId: job.jobId },
          metadata: {
            commandId: derivedId(work.type === 'TombstoneMemory' ? 'tomb' : 'purge', job.jobId, work.recordId),
            tenantId: job.tenant,
            subjectId: job.subjectId,
            actor: serviceActor('deletion-orchestrator'),
            now: this.now(),
            policyRevision: job.policyRevision,
          },
        };
        return { topic: TOPICS.commands, key: subjectKey(job.tenant, job.subjectId), value: command };
      }
    }
  }
}

/** How late the offsets of events that start no deletion work may commit (see SubscriptionSettings.lazyCommitMs). */
const QUIET_COMMIT_MS = 100;

export async function startDeletionOrchestrator(deps: OrchestratorDeps): Promise<ServiceHandle> {
  // Each cause starts at 0: the alerts on their increase then see a pod's first failed job (docs/deploy.md#alerts).
  for (const reason of ['deadline', 'target_failed'] as const) deps.metrics.deletionAlerts.inc({ reason }, 0);
  const orchestrator = new DeletionOrchestrator(deps);
  const sub = await deps.bus.subscribe({
    groupId: ORCHESTRATOR_GROUP, topics: [TOPICS.events, TOPICS.deletionAcks, TOPICS.policyChanges], handler: orchestrator.handle,
    // Most events (every write) are nothing to a deletion: their offsets need not commit one by one.
    lazyCommitMs: QUIET_COMMIT_MS,
  });
  const timer = periodic(deps.tickMs, () => orchestrator.tick(), deps.log, 'deletion orchestrator tick');
  return {
    close: async () => {
      await timer.close();
      await sub.close();
    },
  };
}
