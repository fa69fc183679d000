/**
 * The deletion job's rules (§8.1, §8.2): tombstone first, fan out to every copy, purge (unless
 * the content is kept), verify by replay, destroy keys last, then verified or failed, and a
 * receipt either way. A decision is facts (folded by `evolveDeletion`) and the work to send.
 */
import type { DeletionJob, DeletionTarget, DeletionTask } from '@gm/contracts';
import { evolveDeletion, foldDeletion } from './evolve.ts';
import type { DeletionDecision, DeletionFact, DeletionInput, DeletionSettings, DeletionWork, HoldNow } from './job.ts';

const NOTHING: DeletionDecision = { facts: [], work: [] };

/** Verified or failed: nothing more happens to the job but its receipt. */
export const isFinished = (job: DeletionJob): boolean => job.status === 'verified' || job.status === 'failed';

/** The targets that remove copies, sent together; `key` waits until the replays found nothing. */
export const fanOutTargets = (job: DeletionJob): DeletionTarget[] => job.targets.filter((t) => t !== 'key');

/** A revocation keeps the primary content for audit; a legal hold keeps it for the hold. */
export const retainsPrimary = (job: DeletionJob): boolean => job.mode === 'revoke' || job.legalHold !== undefined;

/**
 * Whether a hold placed now would still change what the job does: a revocation keeps the content
 * anyway, and a job that keeps it for a hold already has one. The orchestrator reads the subject's
 * hold only for such jobs (and for a job still to be opened, unless it revokes).
 */
export const mayBeHeld = (job: Pick<DeletionJob, 'mode' | 'legalHold'>): boolean => job.mode !== 'revoke' && job.legalHold === undefined;

/**
 * The last moments a hold placed meanwhile can still keep the content: before the fan-out, before
 * the purge, before the keys go. What the targets removed already stays removed.
 */
const heldNow = (job: DeletionJob, hold: HoldNow): DeletionFact[] =>
  hold !== null && mayBeHeld(job) ? [{ type: 'HoldSeen', hold: { holdId: hold.holdId, ...(hold.reason === undefined ? {} : { reason: hold.reason }) } }] : [];

const tasks = (targets: readonly DeletionTask['target'][]): DeletionWork[] => targets.map((target) => ({ type: 'Task', target }));
const commands = (type: 'TombstoneMemory' | 'PurgeMemory', recordIds: readonly string[]): DeletionWork[] =>
  recordIds.map((recordId) => ({ type, recordId }));

/**
 * What a job's saved state still waits for: tombstones not yet seen, tasks of targets without
 * evidence, or the purge and verification of a job that waits for neither. A redelivered request
 * and a stalled job send it again; every message is idempotent.
 */
export function pendingWork(job: DeletionJob): DeletionWork[] {
  if (job.status === 'invalidating') {
    const missing = job.recordIds.filter((id) => !job.progress.tombstoned.includes(id));
    if (missing.length > 0) return commands('TombstoneMemory', missing);
    return tasks(fanOutTargets(job).filter((t) => !job.evidence.some((e) => e.target === t)));
  }
  if (job.status === 'verifying' && job.progress.shredding === true) return tasks(['key']);
  if (job.status === 'verifying' && job.progress.nextVerificationAt === undefined) {
    return [...(retainsPrimary(job) ? [] : commands('PurgeMemory', job.recordIds)), ...tasks(['verification'])];
  }
  return [];
}

/**
 * Findings (`path:id`, the receipt-verifier's probes, §8.3) of copies that are derived again from
 * other copies after their target ran: a summary is rebuilt from the index whenever its scope
 * changes, and a rebuild that lags the purge (which takes the content's hash, §8.4) can take a
 * stray copy of the deleted content back in. The other copies are only ever removed by their
 * target: a survivor there stays a finding until someone removes it.
 */
const TARGET_OF_FINDING: Readonly<Record<string, DeletionTarget>> = { summary: 'summary', 'summary-search': 'summary' };

/**
 * The job's targets whose derived copies the last replays still found. A retry sends their tasks
 * again before replaying, so the job verifies once the source of such a copy is gone.
 */
export function targetsToRedo(job: DeletionJob): DeletionTarget[] {
  const found = new Set((job.progress.findings ?? []).map((f) => TARGET_OF_FINDING[f.split(':', 1)[0] ?? '']));
  return fanOutTargets(job).filter((t) => found.has(t));
}

const after = (iso: string, ms: number): string => new Date(Date.parse(iso) + ms).toISOString();

const failed = (job: DeletionJob, reason: string, cause: 'deadline' | 'target_failed', at: string): DeletionDecision => ({
  facts: [{ type: 'JobFailed', reason, cause, while: job.status, at }],
  work: [{ type: 'DeadLetter', reason, while: job.status }, ...tasks(['receipt'])],
});

const verified = (facts: DeletionFact[], at: string): DeletionDecision => ({
  facts: [...facts, { type: 'JobVerified', at }],
  work: tasks(['receipt']),
});

/** Purge (unless the content is kept) and verify: every fan-out target has vouched. */
function startVerification(job: DeletionJob, facts: DeletionFact[], at: string): DeletionDecision {
  const started = foldDeletion(facts, job) ?? job;
  return {
    facts: [...facts, { type: 'VerificationStarted', at }],
    work: [...(retainsPrimary(started) ? [] : commands('PurgeMemory', started.recordIds)), ...tasks(['verification'])],
  };
}

function open(input: Extract<DeletionInput, { type: 'RequestDeletion' }>, settings: DeletionSettings): DeletionDecision {
  const { request, hold, now } = input;
  // A job that keeps the content on purpose (revocation, legal hold) destroys no key.
  const keepsContent = request.mode === 'revoke' || hold !== null;
  const job: DeletionJob = {
    jobId: request.jobId,
    tenant: request.tenant,
    subjectId: request.subjectId,
    recordIds: request.recordIds,
    mode: request.mode,
    requestedBy: request.requestedBy,
    requestedAt: request.requestedAt,
    policyRevision: request.policyRevision,
    targets: keepsContent ? settings.targets.filter((t) => t !== 'key') : [...settings.targets],
    status: 'invalidating',
    deadline: after(request.requestedAt, settings.deadlineMs),
    evidence: [],
    ...(request.mode !== 'revoke' && hold !== null ? { legalHold: { holdId: hold.holdId, ...(hold.reason === undefined ? {} : { reason: hold.reason }) } } : {}),
    updatedAt: now,
    progress: { tombstoned: request.alreadyTombstoned, verificationAttempts: 0 },
  };
  const opened: DeletionFact = { type: 'JobOpened', job };
  // Nothing to tombstone or remove (a forget of a subject without records): straight to the replays.
  if (request.recordIds.length === 0) return { facts: [opened, { type: 'VerificationStarted', at: now }], work: tasks(['verification']) };
  // Tombstone first; records tombstoned by an earlier revocation go straight to fan-out.
  return { facts: [opened], work: pendingWork(job) };
}

function continueAfterRelease(input: Extract<DeletionInput, { type: 'ContinueAfterRelease' }>, settings: DeletionSettings): DeletionDecision {
  const { held, now } = input;
  const job: DeletionJob = {
    jobId: input.jobId, tenant: held.tenant, subjectId: held.subjectId, recordIds: held.recordIds, mode: held.mode,
    requestedBy: input.requestedBy, requestedAt: input.requestedAt, policyRevision: held.policyRevision,
    targets: [...settings.targets], status: 'invalidating', deadline: after(now, settings.deadlineMs),
    evidence: [], continues: { jobId: held.jobId, holdId: input.holdId }, updatedAt: now,
    // Its records are tombstoned already: it starts at the fan-out.
    progress: { tombstoned: held.recordIds, verificationAttempts: 0 },
  };
  // Another hold of the subject may still apply: then the new job keeps the content for that one.
  const facts: DeletionFact[] = [{ type: 'JobOpened', job }, ...heldNow(job, input.hold)];
  const next = foldDeletion(facts) ?? job;
  return { facts, work: tasks(fanOutTargets(next)) };
}

function onTombstoned(input: Extract<DeletionInput, { type: 'RecordTombstoned' }>, job: DeletionJob): DeletionDecision {
  if (job.status !== 'invalidating' || job.progress.tombstoned.includes(input.recordId)) return NOTHING;
  const facts: DeletionFact[] = [{ type: 'RecordTombstoned', recordId: input.recordId, at: input.now }];
  const next = foldDeletion(facts, job) ?? job;
  if (!job.recordIds.every((id) => next.progress.tombstoned.includes(id))) return { facts, work: [] };
  // Every record is tombstoned: fan out (a hold placed since the job opened keeps the content).
  const all = [...facts, ...heldNow(next, input.hold)];
  return { facts: all, work: tasks(fanOutTargets(next)) };
}

function onTargetAck(input: Extract<DeletionInput, { type: 'TargetAcknowledged' }>, job: DeletionJob): DeletionDecision {
  if (input.evidence.status === 'failed') return failed(job, `target ${input.target} failed: ${input.evidence.ref}`, 'target_failed', input.now);
  const done: DeletionFact = { type: 'TargetDone', evidence: input.evidence, at: input.now };
  if (input.target === 'key') {
    // The keys went last, after clean replays: the job is done.
    if (job.status === 'verifying' && job.progress.shredding === true) return verified([done], input.now);
    return NOTHING;
  }
  const next = evolveDeletion(job, done) ?? job;
  if (job.status === 'invalidating' && fanOutTargets(job).every((t) => next.evidence.some((e) => e.target === t))) {
    // The last moment a hold placed meanwhile can still keep the records: before their purge.
    return startVerification(job, [done, ...heldNow(next, input.hold)], input.now);
  }
  return { facts: [done], work: [] };
}

function onVerification(input: Extract<DeletionInput, { type: 'VerificationReported' }>, job: DeletionJob, settings: DeletionSettings): DeletionDecision {
  const { evidence, findings, residual, now } = input;
  if (findings.length > 0 || evidence.status !== 'done') {
    // Not clean yet (a copy is still being removed): try again until the deadline.
    return { facts: [{ type: 'VerificationFound', evidence, findings, residual, retryAt: after(now, settings.verifyRetryMs), at: now }], work: [] };
  }
  const passed: DeletionFact = { type: 'VerificationPassed', evidence, residual, at: now };
  // Keys go last: the replays above needed the content to build their probes. A hold placed
  // meanwhile keeps them, and with them the content in the sealed event log.
  const facts = [passed, ...heldNow(job, input.hold)];
  const clean = foldDeletion(facts, job) ?? job;
  if (clean.targets.includes('key')) return { facts: [...facts, { type: 'ShreddingStarted' }], work: tasks(['key']) };
  return verified(facts, now);
}

/** At most 2^5 × resendAfterMs between two resends (64 s at the default 2 s). */
const MAX_RESEND_DOUBLINGS = 5;

/**
 * How long a job waits without progress before it sends again what it waits for: resendAfterMs,
 * doubled after each resend that brought no progress. A worker that is only slow (a loaded
 * machine, a failover in progress) is then not sent the same task every resendAfterMs, each
 * resend adding to the load that made it slow.
 */
const resendWaitMs = (job: DeletionJob, settings: DeletionSettings): number =>
  settings.resendAfterMs * 2 ** Math.min(job.progress.resumes ?? 0, MAX_RESEND_DOUBLINGS);

/** Timer work: the deadline, verification retries, and stalled jobs (a crash between saving a job and sending its work). */
function onTimePassed(now: string, job: DeletionJob, settings: DeletionSettings): DeletionDecision {
  const at = Date.parse(now);
  if (at > Date.parse(job.deadline)) {
    const findings = job.progress.findings?.length ? ` (${job.progress.findings.join(', ')})` : '';
    return failed(job, `deadline passed while ${job.status}${findings}`, 'deadline', now);
  }
  const retryAt = job.progress.nextVerificationAt;
  if (job.status === 'verifying' && retryAt !== undefined && Date.parse(retryAt) <= at) {
    return { facts: [{ type: 'VerificationRetried', at: now }], work: tasks([...targetsToRedo(job), 'verification']) };
  }
  if (at - Date.parse(job.updatedAt) < resendWaitMs(job, settings)) return NOTHING;
  const work = pendingWork(job);
  return work.length === 0 ? NOTHING : { facts: [{ type: 'JobResumed', at: now }], work };
}

/**
 * One step of a job: `job` is its stored state (undefined before it opens). A redelivered
 * request finds its job and sends what the job still waits for: the first handling may have
 * saved it and died before its sends were committed.
 */
export function decideDeletion(input: DeletionInput, job: DeletionJob | undefined, settings: DeletionSettings): DeletionDecision {
  if (input.type === 'RequestDeletion' || input.type === 'ContinueAfterRelease') {
    if (job !== undefined) return { facts: [], work: pendingWork(job) };
    return input.type === 'RequestDeletion' ? open(input, settings) : continueAfterRelease(input, settings);
  }
  if (job === undefined) return NOTHING;
  if (input.type === 'MarkContinued') return job.continuedBy === undefined ? { facts: [{ type: 'JobContinued', by: input.by }], work: [] } : NOTHING;
  if (isFinished(job)) return NOTHING;
  switch (input.type) {
    case 'RecordTombstoned':
      return onTombstoned(input, job);
    case 'TargetAcknowledged':
      return onTargetAck(input, job);
    case 'VerificationReported':
      return onVerification(input, job, settings);
    case 'TimePassed':
      return onTimePassed(input.now, job, settings);
  }
}

/**
 * A finished job's receipt, not stored yet, is asked again at most once per `resendAfterMs`
 * (counted from the last ask, or from the job's last change); the receipt-verifier makes one
 * receipt per job however often asked.
 */
export const receiptAskDue = (job: DeletionJob, lastAskedMs: number | undefined, nowMs: number, resendAfterMs: number): boolean =>
  isFinished(job) && nowMs - (lastAskedMs ?? Date.parse(job.updatedAt)) >= resendAfterMs;
