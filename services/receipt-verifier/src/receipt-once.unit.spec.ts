/**
 * One receipt per job on deletion.receipts (design §8.4): the orchestrator's `receipt` task and
 * its re-ask can both wait while the signer is slow, and arrive in one batch. The handler runs
 * on a real SQLite state store; the bus context records what each message queued.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ConsumedMessage, OutgoingMessage, ProcessContext } from '@gm/bus';
import type { DeletionJob, DeletionTask } from '@gm/contracts';
import { createLogger, createMetrics } from '@gm/observability';
import { generateSigningKeyPair } from '@gm/policy';
import { ReceiptSigner } from '@gm/policy/receipts';
import { publishedReceiptKeys } from '@gm/policy/receipt-keys';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { receiptHandler } from './receipts.ts';

const job: DeletionJob = {
  jobId: 'job-1', tenant: 'acme', subjectId: 'cust-1', recordIds: ['m-1'], mode: 'delete',
  requestedBy: { agentId: 'bot', principalId: 'alice' }, requestedAt: '2026-11-30T08:00:00.000Z', policyRevision: 2,
  targets: ['primary'], status: 'verified', deadline: '2026-11-30T08:01:00.000Z',
  evidence: [{ target: 'primary', status: 'done', completedAt: '2026-11-30T08:00:01.000Z', verifier: 'projector', ref: 'removed=1;remaining=0' }],
  updatedAt: '2026-11-30T08:00:02.000Z', progress: { tombstoned: ['m-1'], verificationAttempts: 1, findings: [] },
};

const ask = (offset: number): ConsumedMessage => {
  const task: DeletionTask = { jobId: 'job-1', tenantId: 'acme', target: 'receipt', recordIds: ['m-1'], retainPrimary: false, issuedAt: job.updatedAt };
  return { topic: 'deletion.tasks', partition: 0, offset, key: 'job-1', value: task, headers: {}, timestamp: 0 };
};

/** One batch's context: what was sent, and its commit or discard run by the test. */
function batch() {
  const sent: OutgoingMessage[] = [];
  const committed: Array<() => void> = [];
  const discarded: Array<() => void> = [];
  const ctx: ProcessContext = {
    send: (messages) => sent.push(...messages),
    sendWithPositions: () => undefined,
    onCommitted: (fn) => committed.push(fn),
    onDiscarded: (fn) => discarded.push(fn),
  } as ProcessContext;
  return { ctx, sent, commit: () => committed.forEach((fn) => fn()), discard: () => discarded.forEach((fn) => fn()) };
}

async function setup(options: { signer?: Pick<ReceiptSigner, 'sign'> } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-receipt-once-'));
  const state = new StateStore(createSqliteKeyValueStore({ file: path.join(dir, 'state.db') }), 'gm:');
  await state.jobs.put(job);
  const keys = await generateSigningKeyPair();
  const publishKeys = async () => {
    for (const key of await publishedReceiptKeys(keys)) await state.receipts.publishKey(key);
  };
  const metrics = createMetrics();
  const handle = receiptHandler({
    bus: undefined as never, state, clock: { now: () => new Date('2026-11-30T08:00:03.000Z') },
    log: createLogger({ name: 'receipt-once', level: 'silent' }), metrics, keys,
  }, (options.signer ?? await ReceiptSigner.create(keys)) as ReceiptSigner, publishKeys);
  return { state, handle, metrics };
}

describe('receipts: one per job on deletion.receipts', () => {
  it('counts a receipt that could not be signed (the alert compliance relies on), sends nothing and lets the ask be retried', async () => {
    const { state, handle, metrics } = await setup({ signer: { sign: () => Promise.reject(new Error('signing key unreadable')) } });
    const b = batch();
    await expect(handle(ask(0), b.ctx)).rejects.toThrow('signing key unreadable');
    expect(b.sent).toEqual([]);
    expect(await state.receipts.get('acme', 'job-1')).toBeNull();
    expect(await metrics.registry.metrics()).toMatch(/^gm_receipt_signing_failures_total 1$/m);
  });

  it('publishes its signing key before a receipt leaves, when the state store has lost it', async () => {
    const { state, handle } = await setup();
    expect(await state.receipts.publicKeys()).toEqual([]);
    const b = batch();
    await handle(ask(0), b.ctx);
    const [sent] = b.sent.filter((m) => m.topic === 'deletion.receipts');
    const { kid } = sent?.value as { kid: string };
    expect((await state.receipts.publicKeys()).map((k) => k.kid)).toEqual([kid]);
  });

  it('sends the receipt once when the task and its re-ask arrive in one batch', async () => {
    const { handle } = await setup();
    const b = batch();
    await handle(ask(0), b.ctx);
    await handle(ask(1), b.ctx);
    expect(b.sent.filter((m) => m.topic === 'deletion.receipts')).toHaveLength(1);
  });

  it('sends the stored receipt again when the batch that sent it was discarded, and not after it was committed', async () => {
    const { state, handle } = await setup();
    const first = batch();
    await handle(ask(0), first.ctx);
    first.discard();
    const redelivered = batch();
    await handle(ask(0), redelivered.ctx);
    expect(redelivered.sent).toHaveLength(1);
    expect(redelivered.sent[0]?.value).toEqual(first.sent[0]?.value);
    redelivered.commit();
    await expect.poll(() => state.receipts.isPublished('acme', 'job-1')).toBe(true);
    const later = batch();
    await handle(ask(2), later.ctx);
    expect(later.sent).toHaveLength(0);
  });
});
