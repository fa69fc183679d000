import type { Bus, ConsumedMessage, OutgoingMessage, ProcessContext } from '@gm/bus';
import {
  DeletionAck, MemoryEvent, PolicyChange, TOPICS, dlqTopic, readMemoryEvent, serviceActor, subjectKey,
  type Clock, type DeletionJob, type DeletionTarget, type DeletionTask, type MemoryCommand, type ServiceHandle,
} from '@gm/contracts';
import { derivedId } from '@gm/ids';
import type { Logger, Metrics } from '@gm/observability';
import { periodic } from '@gm/time';
import type { StateStore } from '@gm/state-store';

export const ORCHESTRATOR_GROUP = 'deletion-orchestrator';

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
 * Turns revocation, deletion and forget events into durable jobs (§8): tombstone first, then
 * one task per target, acks with evidence, purge, verification. A job that misses its
 * deadline fails loudly (metric, log, dead letter) — never a silent success.
 */
export class DeletionOrchestrator {
  private readonly locks = new Map<string, Promise<void>>();
  /** When this process last asked for a job's missing receipt (epoch ms). */
  private readonly receiptAsked = new Map<string, number>();

  constructor(private readonly deps: OrchestratorDeps) {}

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
    switch (event.type) {
      case 'MemoryRevocationRequested':
        return this.openJob(
          event, [event.data.id, ...(event.data.copies ?? []).map((c) => c.id)], event.data.mode, event.data.alreadyTombstoned ? [event.data.id] : [], ctx,
        );
      case 'SubjectForgotten':
        return this.openJob(
          event, event.data.records.map((r) => r.id), 'forget', event.data.records.filter((r) => r.alreadyTombstoned).map((r) => r.id), ctx,
        );
      case 'MemoryTombstoned': {
        const jobId = event.data.jobId;
        if (jobId === undefined) return;
        return this.withJob(jobId, () => this.onTombstoned(event.metadata.tenantId, jobId, event.data.id, ctx));
      }
      default:
        return;
    }
  };

  private async openJob(
    event: MemoryEvent, recordIds: string[], mode: DeletionJob['mode'], alreadyTombstoned: string[], ctx: ProcessContext,
  ): Promise<void> {
    const jobId = event.type === 'MemoryRevocationRequested' || event.type === 'SubjectForgotten' ? event.data.jobId : '';
    await this.withJob(jobId, async () => {
      const { state, clock } = this.deps;
      const m = event.metadata;
      const existing = await state.jobs.get(m.tenantId, jobId);
      if (existing) {
        // Redelivered: the first handling may have saved the job and died before its sends
        // were committed. Re-sending is safe: commands are idempotent by commandId.
        ctx.send(this.pendingSends(existing));
        return;
      }
      const now = clock.now();
      // A subject on legal hold: tombstone and remove every derived copy, but keep the primary content.
      const hold = mode === 'revoke' ? null : await state.policies.holdOf(m.tenantId, m.subjectId);
      const job: DeletionJob = {
        jobId,
        tenant: m.tenantId,
        subjectId: m.subjectId,
        recordIds,
        mode,
        requestedBy: { agentId: m.actor.agentId, principalId: m.actor.principalId },
        requestedAt: m.now,
        policyRevision: m.policyRevision,
        // A job that keeps the content on purpose (revocation, legal hold) destroys no key.
        targets: mode === 'revoke' || hold ? this.deps.targets.filter((t) => t !== 'key') : this.deps.targets,
        status: 'invalidating',
        deadline: new Date(Date.parse(m.now) + this.deps.deadlineMs).toISOString(),
        evidence: [],
        ...(hold ? { legalHold: { holdId: hold.holdId, reason: hold.reason } } : {}),
        updatedAt: now.toISOString(),
        progress: { tombstoned: alreadyTombstoned, verificationAttempts: 0 },
      };
      if (recordIds.length === 0) {
        await this.startVerification(job, ctx);
        return;
      }
      // Tombstone first; records tombstoned by an earlier revocation go straight to fan-out.
      ctx.send(this.pendingSends(job));
      await state.jobs.put(job);
      this.deps.log.info({ jobId, tenant: job.tenant, records: recordIds.length, mode, legalHold: hold?.holdId }, 'deletion job opened');
    });
  }

  private async onTombstoned(tenant: string, jobId: string, recordId: string, ctx: ProcessContext): Promise<void> {
    const job = await this.deps.state.jobs.get(tenant, jobId);
    if (!job || job.status !== 'invalidating' || job.progress.tombstoned.includes(recordId)) return;
    const tombstoned = [...job.progress.tombstoned, recordId];
    let next: DeletionJob = { ...job, progress: { ...job.progress, tombstoned }, updatedAt: this.deps.clock.now().toISOString() };
    if (job.recordIds.every((id) => tombstoned.includes(id))) {
      // A hold placed since the job opened: the tasks keep the primary content.
      next = await this.heldNow(next);
      ctx.send(this.tasksFor(next));
    }
    await this.deps.state.jobs.put(next);
  }

  private async onAck(ack: DeletionAck, ctx: ProcessContext): Promise<void> {
    await this.withJob(ack.jobId, async () => {
      const job = await this.deps.state.jobs.get(ack.tenantId, ack.jobId);
      if (!job || job.status === 'verified' || job.status === 'failed') return;
      const now = this.deps.clock.now();
      if (ack.target === 'verification') return this.onVerification(job, ack, ctx);
      if (ack.evidence.status === 'failed') return this.fail(job, `target ${ack.target} failed: ${ack.evidence.ref}`);
      const evidence = [...job.evidence.filter((e) => e.target !== ack.target), ack.evidence];
      const next: DeletionJob = { ...job, evidence, updatedAt: now.toISOString() };
      if (ack.target === 'key') {
        if (job.status === 'verifying' && job.progress.shredding === true) return this.complete(next, ctx);
        return;
      }
      if (job.status === 'invalidating' && fanOutTargets(job).every((t) => evidence.some((e) => e.target === t))) {
        // The last moment a hold placed meanwhile can still keep the record: before its purge.
        const held = await this.heldNow(next);
        if (!retainsPrimary(held)) ctx.send(held.recordIds.map((id) => this.command(held, 'PurgeMemory', id, now)));
        return this.startVerification(held, ctx);
      }
      await this.deps.state.jobs.put(next);
    });
  }

  /**
   * The job as it must go on now: a delete or forget whose subject was put on legal hold since
   * the job opened keeps its content from here on (no purge, no key destroyed), and records the
   * hold; what the targets removed already stays removed. Read at each step that removes more.
   */
  private async heldNow(job: DeletionJob): Promise<DeletionJob> {
    if (job.mode === 'revoke' || job.legalHold !== undefined) return job;
    const hold = await this.deps.state.policies.holdOf(job.tenant, job.subjectId);
    if (!hold) return job;
    this.deps.log.info({ jobId: job.jobId, tenant: job.tenant, legalHold: hold.holdId, status: job.status }, 'legal hold placed during the deletion job: its content is kept');
    return { ...job, legalHold: { holdId: hold.holdId, reason: hold.reason }, targets: job.targets.filter((t) => t !== 'key') };
  }

  /**
   * A released legal hold: every job that kept content for it gets a job that purges what it
   * kept (its records are tombstoned already, so it starts at the fan-out), unless another hold
   * of the subject still applies — then the new job keeps it for that one.
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
      await this.withJob(jobId, async () => {
        const existing = await this.deps.state.jobs.get(tenant, jobId);
        if (existing) {
          // Redelivered: re-sending is safe (tasks and commands are idempotent).
          ctx.send(this.pendingSends(existing));
          return;
        }
        const now = this.deps.clock.now();
        const job = await this.heldNow({
          jobId, tenant, subjectId: held.subjectId, recordIds: held.recordIds, mode: held.mode,
          requestedBy: change.metadata.requestedBy, requestedAt: change.metadata.occurredAt, policyRevision: held.policyRevision,
          targets: this.deps.targets, status: 'invalidating', deadline: new Date(now.getTime() + this.deps.deadlineMs).toISOString(),
          evidence: [], continues: { jobId: held.jobId, holdId }, updatedAt: now.toISOString(),
          progress: { tombstoned: held.recordIds, verificationAttempts: 0 },
        });
        ctx.send(this.tasksFor(job));
        await this.deps.state.jobs.put(job);
        this.deps.log.info({ jobId, tenant, continues: held.jobId, releasedHold: holdId, records: job.recordIds.length, legalHold: job.legalHold?.holdId }, 'deletion job opened for a released legal hold');
      });
      // The kept job points to the one that purges for it (GET /v1/deletion-jobs/{id} shows the way).
      await this.withJob(held.jobId, async () => {
        const current = await this.deps.state.jobs.get(tenant, held.jobId);
        if (current && current.continuedBy === undefined) await this.deps.state.jobs.put({ ...current, continuedBy: jobId });
      });
      await this.deps.state.jobs.releasedFrom(tenant, holdId, held.jobId);
    }
  }

  private async startVerification(job: DeletionJob, ctx: ProcessContext): Promise<void> {
    const next: DeletionJob = { ...job, status: 'verifying', updatedAt: this.deps.clock.now().toISOString() };
    ctx.send([this.verificationTask(next)]);
    await this.deps.state.jobs.put(next);
  }

  private async onVerification(job: DeletionJob, ack: DeletionAck, ctx: ProcessContext): Promise<void> {
    const now = this.deps.clock.now();
    const findings = ack.findings ?? [];
    const residual = ack.residual ?? [];
    const evidence = [...job.evidence.filter((e) => e.target !== 'verification'), ack.evidence];
    const attempts = job.progress.verificationAttempts + 1;
    if (findings.length === 0 && ack.evidence.status === 'done') {
      const clean: DeletionJob = {
        ...job, evidence, updatedAt: now.toISOString(), progress: { ...job.progress, verificationAttempts: attempts, findings: [], residual },
      };
      // Keys go last: the replays above needed the content to build their probes. A hold placed
      // meanwhile keeps them, and with them the content in the sealed event log.
      const held = await this.heldNow(clean);
      if (held.targets.includes('key')) {
        const shredding: DeletionJob = { ...held, progress: { ...held.progress, shredding: true } };
        await this.deps.state.jobs.put(shredding);
        ctx.send([this.task(shredding, 'key')]);
        return;
      }
      return this.complete(held, ctx);
    }
    // Not clean yet (a copy is still being removed): try again until the deadline.
    await this.deps.state.jobs.put({
      ...job, evidence, updatedAt: now.toISOString(),
      progress: {
        ...job.progress, verificationAttempts: attempts, findings, residual,
        nextVerificationAt: new Date(now.getTime() + this.deps.verifyRetryMs).toISOString(),
      },
    });
  }

  /** Every copy is proven gone (and, with a `key` target, every key destroyed): verified, receipt asked. */
  private async complete(job: DeletionJob, ctx: ProcessContext): Promise<void> {
    const now = this.deps.clock.now();
    const verified: DeletionJob = { ...job, status: 'verified', updatedAt: now.toISOString() };
    await this.deps.state.receipts.expect(job.tenant, job.jobId);
    await this.deps.state.jobs.put(verified);
    ctx.send([this.task(verified, 'receipt')]);
    this.deps.metrics.deletionJobs.inc({ status: 'verified' });
    this.deps.metrics.receiptLatency.observe(Math.max(0, now.getTime() - Date.parse(job.requestedAt)) / 1000);
    this.deps.log.info({ jobId: job.jobId, tenant: job.tenant, attempts: job.progress.verificationAttempts }, 'deletion job verified');
  }

  private async fail(job: DeletionJob, reason: string): Promise<void> {
    const now = this.deps.clock.now();
    const failed: DeletionJob = { ...job, status: 'failed', failureReason: reason, updatedAt: now.toISOString() };
    await this.deps.state.receipts.expect(job.tenant, job.jobId);
    await this.deps.state.jobs.put(failed);
    this.deps.metrics.deletionJobs.inc({ status: 'failed' });
    this.deps.metrics.deletionAlerts.inc({ reason: reason.startsWith('deadline') ? 'deadline' : 'target_failed' });
    this.deps.log.error({ jobId: job.jobId, tenant: job.tenant, status: job.status, reason }, 'ALERT deletion job failed');
    await this.deps.bus.produce([
      {
        topic: dlqTopic(TOPICS.deletionTasks),
        key: job.jobId,
        value: { jobId: job.jobId, tenant: job.tenant, status: job.status, reason, recordIds: job.recordIds },
        headers: { 'dlq.topic': TOPICS.deletionTasks, 'dlq.error': reason, 'dlq.group': ORCHESTRATOR_GROUP },
      },
      this.task(failed, 'receipt'),
    ]);
  }

  /**
   * What a job's saved state still waits for, as messages: tombstones not yet seen, tasks of
   * targets without evidence, or the purge and verification of a job that waits for neither.
   */
  private pendingSends(job: DeletionJob): OutgoingMessage[] {
    const now = this.deps.clock.now();
    if (job.status === 'invalidating') {
      const missing = job.recordIds.filter((id) => !job.progress.tombstoned.includes(id));
      if (missing.length > 0) return missing.map((id) => this.command(job, 'TombstoneMemory', id, now));
      return fanOutTargets(job).filter((t) => !job.evidence.some((e) => e.target === t)).map((t) => this.task(job, t));
    }
    if (job.status === 'verifying' && job.progress.shredding === true) return [this.task(job, 'key')];
    if (job.status === 'verifying' && job.progress.nextVerificationAt === undefined) {
      const purges = retainsPrimary(job) ? [] : job.recordIds.map((id) => this.command(job, 'PurgeMemory', id, now));
      return [...purges, this.verificationTask(job)];
    }
    return [];
  }

  /** Timer work: fail jobs past their deadline, re-run verification, resume stalled jobs, re-ask missing receipts. */
  async tick(): Promise<void> {
    const now = this.deps.clock.now();
    await this.askMissingReceipts(now);
    for (const open of await this.deps.state.jobs.open()) {
      await this.withJob(open.jobId, async () => {
        const job = await this.deps.state.jobs.get(open.tenant, open.jobId);
        if (!job || job.status === 'verified' || job.status === 'failed') return;
        if (now.getTime() > Date.parse(job.deadline)) {
          const findings = job.progress.findings?.length ? ` (${job.progress.findings.join(', ')})` : '';
          return this.fail(job, `deadline passed while ${job.status}${findings}`);
        }
        const retryAt = job.progress.nextVerificationAt;
        if (job.status === 'verifying' && retryAt !== undefined && Date.parse(retryAt) <= now.getTime()) {
          const { nextVerificationAt: _sent, ...progress } = job.progress;
          const next = { ...job, progress, updatedAt: now.toISOString() };
          await this.deps.state.jobs.put(next);
          await this.deps.bus.produce([this.verificationTask(next)]);
          return;
        }
        // Stalled (a crash between saving the job and committing its sends): send again.
        if (now.getTime() - Date.parse(job.updatedAt) >= (this.deps.resendAfterMs ?? 2_000)) {
          const sends = this.pendingSends(job);
          if (sends.length === 0) return;
          await this.deps.state.jobs.put({ ...job, updatedAt: now.toISOString() });
          await this.deps.bus.produce(sends);
          this.deps.log.warn({ jobId: job.jobId, status: job.status, messages: sends.length }, 'stalled deletion job resumed');
        }
      });
    }
  }

  /**
   * A finished job whose receipt is not stored yet (the process died between saving the job and
   * committing its `receipt` task, or the receipt-verifier is behind) is asked again, at most
   * once per `resendAfterMs`; the receipt-verifier makes one receipt per job however often asked.
   */
  private async askMissingReceipts(now: Date): Promise<void> {
    const resendAfterMs = this.deps.resendAfterMs ?? 2_000;
    for (const { tenant, jobId } of await this.deps.state.receipts.pending()) {
      const job = await this.deps.state.jobs.get(tenant, jobId);
      if (!job || (job.status !== 'verified' && job.status !== 'failed')) continue;
      const last = this.receiptAsked.get(jobId) ?? Date.parse(job.updatedAt);
      if (now.getTime() - last < resendAfterMs) continue;
      if (await this.deps.state.receipts.get(tenant, jobId)) continue;
      this.receiptAsked.set(jobId, now.getTime());
      await this.deps.bus.produce([this.task(job, 'receipt')]);
      this.deps.log.warn({ jobId, tenant, status: job.status }, 'deletion receipt asked again');
    }
    if (this.receiptAsked.size > 10_000) this.receiptAsked.clear();
  }

  private tasksFor(job: DeletionJob): OutgoingMessage[] {
    return fanOutTargets(job).map((target) => this.task(job, target));
  }

  private verificationTask(job: DeletionJob): OutgoingMessage {
    return this.task(job, 'verification');
  }

  private task(job: DeletionJob, target: DeletionTask['target']): OutgoingMessage {
    const task: DeletionTask = {
      jobId: job.jobId, tenantId: job.tenant, target, recordIds: job.recordIds,
      retainPrimary: retainsPrimary(job), issuedAt: this.deps.clock.now().toISOString(),
    };
    return { topic: TOPICS.deletionTasks, key: job.jobId, value: task };
  }

  private command(job: DeletionJob, type: 'TombstoneMemory' | 'PurgeMemory', id: string, now: Date): OutgoingMessage {
    const command: MemoryCommand = {
      type,
      data: { id, jobId: job.jobId },
      metadata: {
        commandId: derivedId(type === 'TombstoneMemory' ? 'tomb' : 'purge', job.jobId, id),
        tenantId: job.tenant,
        subjectId: job.subjectId,
        actor: serviceActor('deletion-orchestrator'),
        now: now.toISOString(),
        policyRevision: job.policyRevision,
      },
    };
    return { topic: TOPICS.commands, key: subjectKey(job.tenant, job.subjectId), value: command };
  }
}

/** The targets that remove copies, sent together; `key` waits until the replays found nothing. */
const fanOutTargets = (job: DeletionJob): DeletionTarget[] => job.targets.filter((t) => t !== 'key');

/** A revocation keeps the primary content for audit; a legal hold keeps it for the hold. */
export const retainsPrimary = (job: DeletionJob): boolean => job.mode === 'revoke' || job.legalHold !== undefined;

/** How late the offsets of events that start no deletion work may commit (see SubscriptionSettings.lazyCommitMs). */
const QUIET_COMMIT_MS = 100;

export async function startDeletionOrchestrator(deps: OrchestratorDeps): Promise<ServiceHandle> {
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
