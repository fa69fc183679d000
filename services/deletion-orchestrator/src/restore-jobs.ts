/**
 * Deletion jobs folded back from the log, for a job store that lost them (Redis emptied; design
 * §4 and §8.1, docs/reliability.md "Rebuilding from the log"). A job is the decider's fold of its
 * inputs, and every input is in a topic: the request and the tombstones in memory.events, the
 * targets' acks in deletion.acks (keyed by job: one partition, in the order they happened), hold
 * releases in policy.changes, and the outcome of a finished job in its receipt on
 * deletion.receipts. The restore runs the same decider over them, job by job in causal order
 * (request, tombstones, acks), then the releases in their order, and writes back only the jobs
 * and receipts the store lacks: a job it still holds is the orchestrator's own record and stays.
 *
 * What the fold cannot see: time passing. A job the log shows unfinished is written open, and the
 * orchestrator's next tick resends what it waits for, or fails it at its deadline, as it does
 * after any restart. A job the fold leaves unfinished while its receipt says how it ended (it
 * failed at its deadline, which only a tick decides) takes the receipt's outcome.
 */
import type { Bus } from '@gm/bus';
import {
  DeletionAck, DeletionReceipt, PolicyChange, SignedReceipt, TOPICS, readMemoryEvent, type DeletionJob,
} from '@gm/contracts';
import { decideDeletion, foldDeletion, isFinished, type DeletionFact, type DeletionInput, type DeletionRequest, type DeletionSettings, type HoldNow } from '@gm/domain';
import { derivedId, keyOf } from '@gm/ids';
import { decodeReceiptPayload } from '@gm/policy/receipts';
import type { StateStore } from '@gm/state-store';
import { deletionInputOfAck, deletionRequestOf, isTargetAck, type TargetAck } from './deletion-inputs.ts';

export interface RestoreReport {
  /** Jobs the log holds (opened by a request or by a hold's release). */
  jobs: number;
  /** Of those, written back because the store did not hold them. */
  restored: number;
  /** Of the restored jobs, those still open: the orchestrator resumes them. */
  open: number;
  /** Receipts written back from deletion.receipts (so that no job is signed twice). */
  receipts: number;
  /** Finished jobs restored without a receipt on deletion.receipts: asked for again. */
  receiptsAsked: number;
}

interface HoldSpan {
  holdId: string;
  subjectId: string;
  reason?: string;
  placedAt: number;
  releasedAt: number;
}

interface Release {
  tenant: string;
  holdId: string;
  change: PolicyChange;
}

/** What the log says about deletion jobs, read in one pass per topic. */
interface DeletionLog {
  requests: DeletionRequest[];
  tombstones: Map<string, Array<{ recordId: string; now: string }>>;
  acks: Map<string, TargetAck[]>;
  holds: Map<string, HoldSpan[]>;
  releases: Release[];
  receipts: Map<string, { signed: SignedReceipt; payload?: DeletionReceipt }>;
}

const jobKey = (tenant: string, jobId: string): string => keyOf(tenant, jobId);

async function readDeletionLog(log: Bus): Promise<DeletionLog> {
  const read: DeletionLog = { requests: [], tombstones: new Map(), acks: new Map(), holds: new Map(), releases: [], receipts: new Map() };
  const append = <T>(map: Map<string, T[]>, key: string, value: T) => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [value]);
    else list.push(value);
  };
  for await (const message of log.readAll(TOPICS.events)) {
    const event = readMemoryEvent(message);
    const request = deletionRequestOf(event);
    if (request !== undefined) read.requests.push(request);
    else if (event.type === 'MemoryTombstoned' && event.data.jobId !== undefined) {
      append(read.tombstones, jobKey(event.metadata.tenantId, event.data.jobId), { recordId: event.data.id, now: event.metadata.now });
    }
  }
  for await (const message of log.readAll(TOPICS.deletionAcks)) {
    const parsed = DeletionAck.safeParse(message.value);
    if (parsed.success && isTargetAck(parsed.data)) append(read.acks, jobKey(parsed.data.tenantId, parsed.data.jobId), parsed.data);
  }
  for await (const message of log.readAll(TOPICS.policyChanges)) {
    const parsed = PolicyChange.safeParse(message.value);
    // Dead-lettered when consumed: the orchestrator never acted on it.
    if (!parsed.success || message.key !== parsed.data.metadata.tenant) continue;
    const change = parsed.data;
    const at = Date.parse(change.metadata.occurredAt);
    if (change.type === 'LegalHoldPlaced') {
      const { hold } = change.data;
      append(read.holds, change.metadata.tenant, {
        holdId: hold.holdId, subjectId: hold.subjectId, ...(hold.reason === undefined ? {} : { reason: hold.reason }),
        placedAt: at, releasedAt: Number.POSITIVE_INFINITY,
      });
    } else if (change.type === 'LegalHoldReleased') {
      for (const span of read.holds.get(change.metadata.tenant) ?? []) {
        if (span.holdId === change.data.holdId && span.releasedAt === Number.POSITIVE_INFINITY) span.releasedAt = at;
      }
      read.releases.push({ tenant: change.metadata.tenant, holdId: change.data.holdId, change });
    }
  }
  for await (const message of log.readAll(TOPICS.deletionReceipts)) {
    const signed = SignedReceipt.safeParse(message.value);
    if (!signed.success || read.receipts.has(jobKey(signed.data.tenant, signed.data.jobId))) continue;
    const payload = DeletionReceipt.safeParse(decodeReceiptPayload(signed.data.jws));
    read.receipts.set(jobKey(signed.data.tenant, signed.data.jobId), { signed: signed.data, ...(payload.success ? { payload: payload.data } : {}) });
  }
  return read;
}

/** The subject's hold at `iso` as the orchestrator read it then: placed by then and not yet released, the first by id. */
function holdAt(read: DeletionLog, tenant: string, subjectId: string, iso: string): HoldNow {
  const at = Date.parse(iso);
  const [hold] = (read.holds.get(tenant) ?? [])
    .filter((h) => h.subjectId === subjectId && h.placedAt <= at && at < h.releasedAt)
    .sort((a, b) => (a.holdId < b.holdId ? -1 : 1));
  return hold === undefined ? null : { holdId: hold.holdId, ...(hold.reason === undefined ? {} : { reason: hold.reason }) };
}

/** The job after one input, as the orchestrator's step folds it (the decided work was sent then; it is not sent again). */
function step(job: DeletionJob | undefined, input: DeletionInput, settings: DeletionSettings): DeletionJob | undefined {
  return foldDeletion(decideDeletion(input, job, settings).facts, job);
}

/** The acks of a job in their order; a report after a found copy follows the retry the orchestrator's tick sent for it. */
function foldAcks(read: DeletionLog, opened: DeletionJob, settings: DeletionSettings): DeletionJob {
  let job = opened;
  for (const ack of read.acks.get(jobKey(job.tenant, job.jobId)) ?? []) {
    const now = ack.evidence.completedAt;
    if (ack.target === 'verification' && job.progress.nextVerificationAt !== undefined) {
      job = foldDeletion([{ type: 'VerificationRetried', at: now }], job) ?? job;
    }
    job = step(job, deletionInputOfAck(ack, now, holdAt(read, job.tenant, job.subjectId, now)), settings) ?? job;
  }
  return job;
}

/**
 * How a job ended, from its receipt, when the fold of its inputs left it open: it failed at its
 * deadline (a failed target's ack is in the log, and the fold fails the job on it).
 */
function endedByReceipt(job: DeletionJob, receipt: DeletionReceipt): DeletionJob {
  if (isFinished(job)) return job;
  const at = receipt.completedAt;
  const fact: DeletionFact = receipt.status === 'verified'
    ? { type: 'JobVerified', at }
    : { type: 'JobFailed', reason: receipt.failureReason ?? 'failed', cause: 'deadline', while: job.status, at };
  return foldDeletion([fact], job) ?? job;
}

/** Every job the log holds, folded. `released`: the (job, hold) pairs whose release was handled. */
function foldJobs(read: DeletionLog, settings: DeletionSettings): { jobs: Map<string, DeletionJob>; released: Array<{ job: DeletionJob; holdId: string }> } {
  const jobs = new Map<string, DeletionJob>();
  for (const request of read.requests) {
    const key = jobKey(request.tenant, request.jobId);
    // A redelivered request finds its job (the decider sends its pending work again, nothing more).
    if (jobs.has(key)) continue;
    let job = step(undefined, {
      type: 'RequestDeletion', now: request.requestedAt, request, hold: holdAt(read, request.tenant, request.subjectId, request.requestedAt),
    }, settings);
    if (job === undefined) continue;
    for (const { recordId, now } of read.tombstones.get(key) ?? []) {
      job = step(job, { type: 'RecordTombstoned', now, recordId, hold: holdAt(read, job.tenant, job.subjectId, now) }, settings) ?? job;
    }
    jobs.set(key, foldAcks(read, job, settings));
  }
  const released: Array<{ job: DeletionJob; holdId: string }> = [];
  // A release handled once is not handled again (the orchestrator drops the job from the hold's set).
  const handled = new Set<string>();
  for (const { tenant, holdId, change } of read.releases) {
    const now = change.metadata.occurredAt;
    const held = [...jobs.values()]
      .filter((j) => j.tenant === tenant && j.legalHold?.holdId === holdId && !handled.has(keyOf(tenant, holdId, j.jobId)))
      .sort((a, b) => (a.jobId < b.jobId ? -1 : 1));
    for (const job of held) {
      const jobId = derivedId('release', job.jobId, holdId);
      const continued = step(undefined, {
        type: 'ContinueAfterRelease', now, jobId, held: job, holdId, requestedBy: change.metadata.requestedBy, requestedAt: now,
        hold: holdAt(read, tenant, job.subjectId, now),
      }, settings);
      if (continued !== undefined) jobs.set(jobKey(tenant, jobId), foldAcks(read, continued, settings));
      const marked = step(job, { type: 'MarkContinued', by: jobId }, settings) ?? job;
      jobs.set(jobKey(tenant, job.jobId), marked);
      released.push({ job: marked, holdId });
      handled.add(keyOf(tenant, holdId, job.jobId));
    }
  }
  for (const [key, job] of jobs) {
    const receipt = read.receipts.get(key);
    if (receipt?.payload !== undefined) jobs.set(key, endedByReceipt(job, receipt.payload));
  }
  return { jobs, released };
}

/**
 * Writes back the deletion jobs and receipts the store lost, folded from the log. Nothing that
 * writes them (deletion-orchestrator, receipt-verifier) may run meanwhile: a receipt signed
 * before its published copy is restored would be a second receipt for the job.
 */
export async function restoreDeletionJobs(
  state: StateStore, log: Bus, deployment: Pick<DeletionSettings, 'targets' | 'deadlineMs' | 'verifyRetryMs'>,
): Promise<RestoreReport> {
  // Resends are decided on time passing, which the fold never feeds the decider.
  const settings: DeletionSettings = { ...deployment, resendAfterMs: Number.POSITIVE_INFINITY };
  const read = await readDeletionLog(log);
  let receipts = 0;
  for (const { signed } of read.receipts.values()) {
    if (await state.receipts.get(signed.tenant, signed.jobId)) continue;
    await state.receipts.putOnce(signed);
    await state.receipts.markPublished(signed.tenant, signed.jobId);
    receipts += 1;
  }
  const { jobs, released } = foldJobs(read, settings);
  const report: RestoreReport = { jobs: jobs.size, restored: 0, open: 0, receipts, receiptsAsked: 0 };
  const restoredKeys = new Set<string>();
  for (const [key, job] of jobs) {
    if (await state.jobs.get(job.tenant, job.jobId)) continue;
    await state.jobs.put(job);
    restoredKeys.add(key);
    report.restored += 1;
    if (!isFinished(job)) report.open += 1;
    else if (!read.receipts.has(key)) {
      await state.receipts.expect(job.tenant, job.jobId);
      report.receiptsAsked += 1;
    }
  }
  // put() indexes a held job under its hold; a release already handled must not be handled again.
  for (const { job, holdId } of released) {
    if (restoredKeys.has(jobKey(job.tenant, job.jobId))) await state.jobs.releasedFrom(job.tenant, holdId, job.jobId);
  }
  return report;
}
