import { createHash } from 'node:crypto';
import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import {
  CONSUMER_GROUPS, CopyErasureState,
  DeletionTask, TOPICS,
  type Clock, type ContentCommitment, type DeletionJob, type DeletionReceipt, type ServiceHandle,
} from '@gm/contracts';
import { keyOf } from '@gm/ids';
import type { Logger, Metrics } from '@gm/observability';
import { publishedReceiptKeys } from '@gm/policy/receipt-keys';
import { ReceiptSigner, type ReceiptKeyPair } from '@gm/policy/receipts';
import type { StateStore } from '@gm/state-store';
import { receiptCommitments } from './commitments.ts';

export const RECEIPT_SIGNER_GROUP = CONSUMER_GROUPS.receiptSigner;
export const RECEIPT_ISSUER = 'governed-memory/receipt-verifier';

/** The event log before (or without) crypto-shredding: the content is still readable there. */
export const EVENT_LOG_NOTE =
  'memory.events still holds the content of these records (in the events that wrote them): no key was destroyed; '
  + '"retention" covers the copies listed in "targets" only';

/** After the `key` target: what is left in the logs, and for how long. */
export const EVENT_LOG_SHREDDED_NOTE =
  'memory.events holds these records\' content only as AES-256-GCM ciphertext whose data keys (and, for a forget, the subject\'s '
  + 'key-encryption key) were destroyed — see the "key" target — so no service can decrypt it; their write commands on '
  + 'memory.commands are sealed with hourly transit keys, destroyed about two hours after the write once write-admission '
  + 'has consumed them';

export const REVOKED_RETENTION_REASON = 'revoked: content retained for audit';

/** Deterministic per job: a redelivered task can never mint a second receipt id. */
export const receiptIdOf = (tenant: string, jobId: string): string =>
  `rcpt_${createHash('sha256').update(`${tenant}/${jobId}`).digest('hex').slice(0, 32)}`;

/**
 * What a finished job did, as a receipt payload: ids, content commitments (commitments.ts),
 * evidence per target, replay counts and the retention decision — never content, nor a plain
 * hash of it, nor a legal hold's reason (for those who may read holds only).
 */
export function buildReceipt(job: DeletionJob, commitments: ContentCommitment[], issuedAt: Date): DeletionReceipt {
  if (job.status !== 'verified' && job.status !== 'failed') throw new Error(`job ${job.jobId} is ${job.status}, not finished`);
  const verification = job.evidence.find((e) => e.target === 'verification');
  const probes = verification ? /(?:^|;)probes=(\d+)/.exec(verification.ref)?.[1] : undefined;
  return {
    receiptId: receiptIdOf(job.tenant, job.jobId),
    jobId: job.jobId,
    tenant: job.tenant,
    mode: job.mode,
    subjectId: job.subjectId,
    recordIds: job.recordIds,
    contentCommitments: commitments,
    requestedBy: job.requestedBy,
    requestedAt: job.requestedAt,
    completedAt: job.updatedAt,
    policyRevision: job.policyRevision,
    targets: job.targets.map((target) => {
      const e = job.evidence.find((x) => x.target === target);
      return e
        ? { target, status: e.status, completedAt: e.completedAt, ref: e.ref }
        : { target, status: 'missing' as const, completedAt: null, ref: '' };
    }),
    replay: {
      probes: probes === undefined ? null : Number(probes),
      ref: verification?.ref ?? '',
      attempts: job.progress.verificationAttempts,
      findings: job.progress.findings ?? [],
      residual: job.progress.residual ?? [],
    },
    status: job.status,
    ...(job.failureReason === undefined ? {} : { failureReason: job.failureReason }),
    ...retentionOf(job),
    ...(job.legalHold ? { legalHold: { holdId: job.legalHold.holdId } } : {}),
    eventLog: shredded(job) ? { holdsContent: false, note: EVENT_LOG_SHREDDED_NOTE } : { holdsContent: true, note: EVENT_LOG_NOTE },
    ...copiesOf(job),
    issuedAt: issuedAt.toISOString(),
    issuer: RECEIPT_ISSUER,
  };
}

/** Never claims more than is true: `purged` only for a verified delete/forget that retained nothing, keys included. */
function retentionOf(job: DeletionJob): Pick<DeletionReceipt, 'retention' | 'retentionReason'> {
  if (job.status === 'failed') {
    return { retention: 'access_revoked_retained', retentionReason: 'job failed: not every copy was proven removed (see targets and replay)' };
  }
  if (job.legalHold) return { retention: 'access_revoked_retained', retentionReason: `legal hold ${job.legalHold.holdId}` };
  if (job.mode === 'revoke') return { retention: 'access_revoked_retained', retentionReason: REVOKED_RETENTION_REASON };
  if (!shredded(job)) return { retention: 'access_revoked_retained', retentionReason: 'the event log still holds the content: no key was destroyed' };
  return { retention: 'purged' };
}

/** What each state means for a copy's deleted bytes, in the receipt's words (design §8.4). */
const COPY_NOTES: Record<CopyErasureState, string> = {
  erased: 'no file of this copy holds the deleted bytes any more',
  pending_compaction: 'unreadable through every path; the bytes stay in this copy\'s files until it compacts (a segment merge, a checkpoint)',
  memory_only: 'gone from memory; the persistence files (AOF/RDB) keep the bytes until they are rewritten',
};

/** The `key` target's statement per copy outside the log (its evidence's `copies=`), once it ran. */
function copiesOf(job: DeletionJob): Pick<DeletionReceipt, 'copies'> {
  const key = job.evidence.find((e) => e.target === 'key' && e.status === 'done');
  const listed = key === undefined ? undefined : /(?:^|;)copies=([^;]*)/.exec(key.ref)?.[1];
  if (listed === undefined || listed === '') return {};
  const copies = listed.split(',').flatMap((entry) => {
    const [copy, raw] = entry.split(':');
    const state = CopyErasureState.safeParse(raw);
    return copy === undefined || !state.success ? [] : [{ copy, state: state.data, note: COPY_NOTES[state.data] }];
  });
  return copies.length === 0 ? {} : { copies };
}

/** The `key` target acknowledged: the records' keys are destroyed and their events proven undecryptable. */
const shredded = (job: DeletionJob): boolean => job.evidence.some((e) => e.target === 'key' && e.status === 'done');

export interface ReceiptSignerDeps {
  bus: Bus;
  state: StateStore;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** The receipt signing key pair (Ed25519 JWKs). */
  keys: ReceiptKeyPair;
}

/**
 * Signs and publishes the receipt of a finished job (the orchestrator's `receipt` task). One
 * receipt per job: it is stored by jobId before it is published, a redelivered or repeated task
 * re-sends the stored receipt instead of signing another, and once its message is committed on
 * deletion.receipts a later duplicate sends nothing.
 */
export function receiptHandler(deps: ReceiptSignerDeps, signer: ReceiptSigner, publishKeys: () => Promise<void>) {
  const { state, log } = deps;
  /**
   * Jobs whose receipt this instance has queued and not yet marked published: a second ask in
   * the same batch (the orchestrator's task and its re-ask, both waiting while this instance was
   * slow), or one handled before the first's mark landed, would otherwise send the same receipt
   * again. Dropped when the send is discarded, so a redelivered ask sends it.
   */
  const sending = new Set<string>();
  return async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const task = DeletionTask.parse(message.value);
    if (task.target !== 'receipt') return;
    const { tenantId: tenant, jobId } = task;
    let stored = await state.receipts.get(tenant, jobId);
    if (!stored) {
      const job = await state.jobs.get(tenant, jobId);
      if (!job || (job.status !== 'verified' && job.status !== 'failed')) {
        // The orchestrator saves the final job before it asks; it re-asks while the receipt is missing.
        log.warn({ jobId, tenant, status: job?.status ?? null }, 'receipt asked for a job that is not finished');
        return;
      }
      // Records the purge has not reached (a failed job, a revocation, a hold) still have their hash in the record state.
      const records = await state.records.getMany(tenant, job.recordIds);
      const hashes = new Map([...records].map(([id, meta]) => [id, meta.contentHash]));
      const receipt = buildReceipt(job, await receiptCommitments(state, tenant, jobId, job.recordIds, hashes), deps.clock.now());
      try {
        stored = await state.receipts.putOnce(await signer.sign(receipt));
      } catch (err) {
        // What the receipt-signing alert counts (docs/deploy.md); the bus retries the ask.
        deps.metrics.receiptSigningFailures.inc();
        throw err;
      }
      deps.metrics.deletionReceipts.inc({ status: receipt.status, retention: receipt.retention });
      log.info({ jobId, tenant, receiptId: stored.receiptId, status: receipt.status, retention: receipt.retention, kid: stored.kid }, 'deletion receipt signed');
    } else if (await state.receipts.isPublished(tenant, jobId)) {
      return;
    }
    const sendingKey = keyOf(tenant, jobId);
    if (sending.has(sendingKey)) return;
    // A receipt leaves only with its key published: the state store may have lost the keys
    // (Redis emptied, then rebuilt from the log, which does not hold them). Before the mark
    // below, so a failure here leaves the ask to be retried.
    await publishKeys();
    if (sending.has(sendingKey)) return;
    sending.add(sendingKey);
    const published = stored;
    ctx.send([{ topic: TOPICS.deletionReceipts, key: jobId, value: published }]);
    ctx.onDiscarded(() => sending.delete(sendingKey));
    ctx.onCommitted(() => {
      state.receipts.markPublished(tenant, jobId)
        .then(() => sending.delete(sendingKey))
        .catch((err: unknown) => log.warn({ err, jobId }, 'could not mark the receipt published'));
    });
  };
}

/**
 * How often the signer publishes its public keys again. They live in the state store, which can
 * lose them (a Redis emptied and rebuilt from the log, which does not carry them); receipts
 * already on deletion.receipts verify again within this long, without waiting for a new job.
 */
const KEY_REPUBLISH_MS = 30_000;

export async function startReceiptSigner(deps: ReceiptSignerDeps): Promise<ServiceHandle> {
  const signer = await ReceiptSigner.create(deps.keys);
  // Its own public key, and those of the keys it was rotated from: old receipts keep verifying.
  const keys = await publishedReceiptKeys(deps.keys);
  const publishKeys = async () => {
    for (const key of keys) await deps.state.receipts.publishKey(key);
  };
  await publishKeys();
  const republish = setInterval(() => {
    publishKeys().catch((err: unknown) => deps.log.warn({ err }, 'could not publish the receipt keys again'));
  }, KEY_REPUBLISH_MS);
  republish.unref();
  const sub = await deps.bus.subscribe({ groupId: RECEIPT_SIGNER_GROUP, topics: [TOPICS.deletionTasks], handler: receiptHandler(deps, signer, publishKeys) });
  return {
    close: async () => {
      clearInterval(republish);
      await sub.close();
    },
  };
}
