import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumedMessage, LogPosition } from '@gm/bus';
import {
  CommandReply, DeletionTask, MemoryCommand, MemoryEvent, PolicyChange, SignedReceipt, TOPICS, deletionAck, dlqTopic, subjectKey,
  type DeletionJob, type DeletionTarget, type MemoryCommandType, type ServiceHandle,
} from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { derivedId } from '@gm/ids';
import { createLogger, createMetrics, type Logger, type Metrics } from '@gm/observability';
import {
  LogSink, TEST_WRITER, eventually, openEmbeddedFixture, writeMemoryCommand, type EmbeddedFixture,
} from '@gm/testing/embedded-fixture';
// The services run in-process: devDependencies, for this spec only.
import { INDEX_BUILDER_GROUP, startIndexBuilder, startIndexTargets, toIndexDocument } from '@gm/index-builder';
import { PROJECTOR_GROUP, startPrimaryTarget, startProjector } from '@gm/projector';
import { generateSigningKeyPair } from '@gm/policy';
import { startReceiptSigner, startReceiptVerifier } from '@gm/receipt-verifier';
import { startBrokerTargets } from '@gm/retrieval-broker';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from '@gm/write-admission';
import { DeletionOrchestrator, ORCHESTRATOR_GROUP, startDeletionOrchestrator } from './orchestrator.ts';
import { restoreDeletionJobs } from './restore-jobs.ts';

const TENANT = 'acme';
const DEADLINE_MS = 60_000;
const VERIFY_RETRY_MS = 5_000;
/** The copies the embedded runtime keeps (apps/embedded): each one must acknowledge. */
const EMBEDDED_TARGETS: DeletionTarget[] = ['primary', 'keyword', 'retrieval_cache', 'evidence_packet'];

type Worker = 'admission' | 'projector' | 'indexBuilder' | 'orchestrator' | 'primary' | 'keyword' | 'broker' | 'verifier' | 'signer';
/** Everything but the target workers and the verifier: commands in, events folded, jobs opened. */
const PIPELINE: Worker[] = ['admission', 'projector', 'indexBuilder', 'orchestrator'];
const TARGET_WORKERS: Worker[] = ['primary', 'keyword', 'broker'];

interface Env {
  fx: EmbeddedFixture;
  logs: LogSink;
  log: Logger;
  metrics: Metrics;
  handles: ServiceHandle[];
  targets: DeletionTarget[];
}

let env: Env | undefined;

afterEach(async () => {
  const current = env;
  env = undefined;
  if (!current) return;
  try {
    for (const handle of current.handles.reverse()) await handle.close();
  } finally {
    await current.fx.close();
  }
});

async function setup(targets: DeletionTarget[] = EMBEDDED_TARGETS): Promise<Env> {
  const logs = new LogSink();
  env = {
    fx: await openEmbeddedFixture({ partitions: 3 }),
    logs,
    log: createLogger({ name: 'orchestrator-int', level: 'info', destination: logs }),
    metrics: createMetrics(),
    handles: [],
    targets,
  };
  return env;
}

/** Every service stopped, as a deployment whose services are down. */
async function stopAll(e: Env): Promise<void> {
  for (const handle of e.handles.splice(0).reverse()) await handle.close();
}

async function start(e: Env, ...workers: Worker[]): Promise<void> {
  const { fx, metrics } = e;
  const { bus, state, index, clock } = fx;
  const log = (service: string) => e.log.child({ service });
  for (const worker of workers) {
    switch (worker) {
      case 'admission':
        e.handles.push(await startWriteAdmission({
          bus, metrics, log: log('write-admission'), decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 86_400_000 },
          snapshots: { store: state.admission, intervalMs: 60_000, maxEntries: 100_000 },
        }));
        break;
      case 'projector':
        e.handles.push(await startProjector({ bus, state, log: log('projector') }));
        break;
      case 'indexBuilder':
        e.handles.push(await startIndexBuilder({ bus, index, state }));
        break;
      case 'orchestrator':
        e.handles.push(await startDeletionOrchestrator({
          bus, state, clock, metrics, log: log('deletion-orchestrator'), targets: e.targets,
          deadlineMs: DEADLINE_MS, verifyRetryMs: VERIFY_RETRY_MS, tickMs: 10,
        }));
        break;
      case 'primary':
        e.handles.push(await startPrimaryTarget({ bus, state, clock }));
        break;
      case 'keyword':
        e.handles.push(await startIndexTargets({ bus, index, clock }));
        break;
      case 'broker':
        e.handles.push(await startBrokerTargets({ bus, state, clock }));
        break;
      case 'verifier':
        e.handles.push(await startReceiptVerifier({ bus, index, state, clock }));
        break;
      case 'signer':
        e.handles.push(await startReceiptSigner({ bus, state, clock, log: log('receipt-verifier'), metrics, keys: await generateSigningKeyPair() }));
        break;
      default: {
        const never: never = worker;
        throw new Error(`unknown worker ${String(never)}`);
      }
    }
  }
}

/** Produces a command and waits until write-admission committed it; returns its reply. */
async function send(e: Env, command: MemoryCommand): Promise<CommandReply> {
  const { bus } = e.fx;
  const [position] = await bus.produce([
    { topic: TOPICS.commands, key: subjectKey(command.metadata.tenantId, command.metadata.subjectId), value: command },
  ]);
  await committed(e, WRITE_ADMISSION_GROUP, position);
  const reply = (await e.fx.readTopic(TOPICS.replies)).find((m) => m.key === command.metadata.commandId);
  if (!reply) throw new Error(`no reply to ${command.metadata.commandId}`);
  return CommandReply.parse(reply.value);
}

async function committed(e: Env, group: string, position: LogPosition | undefined): Promise<void> {
  if (position === undefined) throw new Error('nothing was produced');
  expect(await e.fx.bus.waitForCommitted(group, position, 10_000), `${group} committed ${position.topic}`).toBe(true);
}

/** Waits until `group` has consumed everything on `topic` so far. */
async function caughtUp(e: Env, group: string, topic: string): Promise<void> {
  await eventually(`${group} caught up on ${topic}`, async () => {
    const ends = await e.fx.bus.endOffsets(topic);
    const done = await e.fx.bus.committedOffsets(group, topic);
    return ends.every((end, p) => (done[p] ?? 0) >= end);
  });
}

/** The read-your-writes promise of the API: the projections have folded every event. */
async function projected(e: Env): Promise<void> {
  await caughtUp(e, PROJECTOR_GROUP, TOPICS.events);
  await caughtUp(e, INDEX_BUILDER_GROUP, TOPICS.events);
}

const meta = (e: Env, commandId: string, subjectId: string) => ({
  commandId, tenantId: TENANT, subjectId, now: e.fx.clock.iso(), actor: TEST_WRITER, policyRevision: 1,
});

async function write(e: Env, id: string, subjectId: string, content: string, trust: 'trusted' | 'untrusted' = 'trusted'): Promise<void> {
  const reply = await send(e, writeMemoryCommand(meta(e, `cmd-write-${id}`, subjectId), { id, content, trust }));
  expect(reply.outcome).toBe('accepted');
}

const deletion = (e: Env, type: 'DeleteMemory' | 'RevokeMemory', id: string, jobId: string, subjectId: string) =>
  MemoryCommand.parse({ type, data: { id, jobId }, metadata: meta(e, `cmd-${jobId}`, subjectId) });

const job = async (e: Env, jobId: string): Promise<DeletionJob | null> => e.fx.state.jobs.get(TENANT, jobId);

async function jobWhen(e: Env, jobId: string, what: string, accept: (j: DeletionJob) => boolean): Promise<DeletionJob> {
  return eventually(`job ${jobId} ${what}`, async () => {
    const current = await job(e, jobId);
    return current !== null && accept(current) ? current : undefined;
  });
}

async function commandsOf(e: Env, type: MemoryCommandType, jobId: string): Promise<string[]> {
  return (await e.fx.readTopic(TOPICS.commands))
    .map((m) => MemoryCommand.parse(m.value))
    .filter((c) => c.type === type && 'jobId' in c.data && c.data.jobId === jobId)
    .map((c) => ('id' in c.data ? c.data.id : ''))
    .sort();
}

async function tasksOf(e: Env, jobId: string): Promise<DeletionTask[]> {
  return (await e.fx.readTopic(TOPICS.deletionTasks)).map((m) => DeletionTask.parse(m.value)).filter((t) => t.jobId === jobId);
}

const targetsOf = (tasks: DeletionTask[]): string[] => tasks.map((t) => t.target).sort();
const evidenceOf = (j: DeletionJob): string[] => j.evidence.map((x) => `${x.target}:${x.status}`).sort();
const metric = async (e: Env, name: string): Promise<string> => e.metrics.registry.getSingleMetricAsString(name);
const alertsFor = (e: Env, jobId: string) =>
  e.logs.records().filter((r) => r.msg === 'ALERT deletion job failed' && r.jobId === jobId);
const deadLettersFor = async (e: Env, jobId: string): Promise<ConsumedMessage[]> =>
  (await e.fx.readTopic(dlqTopic(TOPICS.deletionTasks))).filter((m) => m.key === jobId);

/** Deletes one freshly written record and waits until its job has tombstoned it. */
async function deleteOne(e: Env, id: string, jobId: string, mode: 'DeleteMemory' | 'RevokeMemory' = 'DeleteMemory'): Promise<void> {
  await write(e, id, `cust-${id}`, `Customer ${id} keeps a spare key under the mat`);
  await projected(e);
  const reply = await send(e, deletion(e, mode, id, jobId, `cust-${id}`));
  expect(reply).toMatchObject({ outcome: 'accepted', result: { status: 'revocation_pending', jobId } });
}

/** Asserts the loud failure of §8.2: failed status, metric, ALERT log line and a dead letter. */
async function expectLoudFailure(e: Env, jobId: string, reason: string, alertReason: 'deadline' | 'target_failed'): Promise<void> {
  const failed = await jobWhen(e, jobId, 'failed', (j) => j.status === 'failed');
  expect(failed.failureReason).toBe(reason);
  expect(await metric(e, 'gm_deletion_alerts_total')).toContain(`gm_deletion_alerts_total{reason="${alertReason}"} 1`);
  expect(await metric(e, 'gm_deletion_jobs_total')).toContain('gm_deletion_jobs_total{status="failed"} 1');
  expect(alertsFor(e, jobId)).toEqual([expect.objectContaining({ level: 50, jobId, tenant: TENANT, reason })]);
  const letters = await eventually('dead letter', async () => {
    const found = await deadLettersFor(e, jobId);
    return found.length > 0 ? found : undefined;
  });
  expect(letters).toHaveLength(1);
  expect(letters[0]?.value).toMatchObject({ jobId, tenant: TENANT, reason });
  expect(letters[0]?.headers).toMatchObject({ 'dlq.topic': TOPICS.deletionTasks, 'dlq.error': reason, 'dlq.group': ORCHESTRATOR_GROUP });
}

/** A legal hold placed on a subject (as the admin API appends it to policy.changes). */
const holdChange = (e: Env, holdId: string, subjectId: string) => ({
  type: 'LegalHoldPlaced' as const,
  data: { hold: { holdId, tenant: TENANT, subjectId, reason: 'litigation 2026-31' } },
  metadata: { changeId: `chg-${holdId}`, tenant: TENANT, requestedBy: { agentId: 'admin', principalId: 'carol' }, occurredAt: e.fx.clock.iso() },
});
/** What the policy projector and the orchestrator both read: the change on its topic, folded into the state. */
const release = async (e: Env, holdId: string): Promise<void> => {
  const change = PolicyChange.parse({
    type: 'LegalHoldReleased', data: { holdId },
    metadata: { changeId: `chg-release-${holdId}`, tenant: TENANT, requestedBy: { agentId: 'admin', principalId: 'dora' }, occurredAt: e.fx.clock.iso() },
  });
  const [at] = await e.fx.bus.produce([{ topic: TOPICS.policyChanges, key: TENANT, value: change }]);
  await committed(e, ORCHESTRATOR_GROUP, at);
};
const releaseJobOf = (jobId: string, holdId: string) => derivedId('release', jobId, holdId);

describe('deletion orchestrator with the embedded services', () => {
  it('forgets a subject: invalidating → verifying → verified, one evidence per target, each command sent once', async () => {
    const e = await setup();
    const { fx } = e;
    await start(e, ...PIPELINE);
    await write(e, 'f-1', 'cust-f', 'Flamingo account uses rebate plan A');
    await write(e, 'f-2', 'cust-f', 'Flamingo said the tool output was wrong', 'untrusted');
    await write(e, 'g-1', 'cust-g', 'Gannet account uses rebate plan B');
    await projected(e);
    // Copies the read path made: a cached result and an evidence packet citing f-1 and g-1.
    await fx.state.cache.set('search:rebate', '["f-1","g-1"]', TENANT, ['f-1', 'g-1'], 600_000);
    const item = (recordId: string) => ({
      recordId, excerpt: `excerpt of ${recordId}`, provenanceRefs: [{ source: 'user' as const, observedAt: fx.clock.iso() }],
      allowedUse: ['support'], rank: { lexical: 1, confidence: 0.8, recency: 1, score: 1 },
    });
    await fx.state.packets.put({
      packet: { packetId: 'pkt-1', runId: 'run-1', policyRevision: 1, expiresAt: new Date(fx.clock.ms + 600_000).toISOString(), items: [item('f-1'), item('g-1')] },
      tenantId: TENANT, agentId: TEST_WRITER.agentId, invalidated: [],
    }, 600_000);

    const forget = MemoryCommand.parse({ type: 'ForgetSubject', data: { jobId: 'job-forget', within: { kind: 'tenant' } }, metadata: meta(e, 'cmd-forget', 'cust-f') });
    expect(await send(e, forget)).toMatchObject({ outcome: 'accepted', result: { jobId: 'job-forget' } });

    // Tombstone first: the read path denies before any target worker has run.
    const invalidating = await jobWhen(e, 'job-forget', 'tombstoned both records', (j) => j.progress.tombstoned.length === 2);
    expect(invalidating).toMatchObject({ status: 'invalidating', mode: 'forget', recordIds: ['f-1', 'f-2'], evidence: [], targets: EMBEDDED_TARGETS });
    const tasks = await eventually('one task per target', async () => {
      const found = await tasksOf(e, 'job-forget');
      return found.length === EMBEDDED_TARGETS.length ? found : undefined;
    });
    expect(targetsOf(tasks)).toEqual([...EMBEDDED_TARGETS].sort());
    expect(tasks.every((t) => !t.retainPrimary && t.recordIds.join() === 'f-1,f-2')).toBe(true);
    await projected(e);
    expect([...(await fx.state.tombstones.filterTombstoned(TENANT, ['f-1', 'f-2', 'g-1']))].sort()).toEqual(['f-1', 'f-2']);
    expect(await fx.index.get(TENANT, 'f-1')).toBeNull();
    expect(await commandsOf(e, 'PurgeMemory', 'job-forget')).toEqual([]);

    // Every target acknowledges with evidence: purge and verification start.
    await start(e, ...TARGET_WORKERS);
    const verifying = await jobWhen(e, 'job-forget', 'verifying', (j) => j.status === 'verifying');
    expect(evidenceOf(verifying)).toEqual(['evidence_packet:done', 'keyword:done', 'primary:done', 'retrieval_cache:done']);
    await eventually('verification task', async () => targetsOf(await tasksOf(e, 'job-forget')).includes('verification'));

    await start(e, 'verifier');
    const verified = await jobWhen(e, 'job-forget', 'verified', (j) => j.status === 'verified' || j.status === 'failed');
    expect(verified.status).toBe('verified');
    expect(evidenceOf(verified)).toEqual(['evidence_packet:done', 'keyword:done', 'primary:done', 'retrieval_cache:done', 'verification:done']);
    expect(verified.progress).toMatchObject({ verificationAttempts: 1, findings: [] });

    await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
    await projected(e);
    expect(await commandsOf(e, 'TombstoneMemory', 'job-forget')).toEqual(['f-1', 'f-2']);
    expect(await commandsOf(e, 'PurgeMemory', 'job-forget')).toEqual(['f-1', 'f-2']);
    // One task per target, one verification, and once verified one request for its receipt.
    expect(targetsOf(await tasksOf(e, 'job-forget'))).toEqual([...EMBEDDED_TARGETS, 'receipt', 'verification'].sort());
    for (const id of ['f-1', 'f-2']) {
      expect((await fx.state.records.get(TENANT, id))?.status).toBe('purged');
      expect(await fx.state.contents.get(TENANT, id)).toBeNull();
    }
    expect(await fx.state.cache.get('search:rebate')).toBeNull();
    const packet = await fx.state.packets.get('pkt-1');
    expect(packet?.packet.items.map((i) => [i.recordId, i.excerpt])).toEqual([['f-1', ''], ['g-1', 'excerpt of g-1']]);
    // Nothing of another subject is touched.
    expect((await fx.state.records.get(TENANT, 'g-1'))?.status).toBe('active');
    expect(await fx.state.contents.get(TENANT, 'g-1')).toBe('Gannet account uses rebate plan B');
    expect(await fx.index.get(TENANT, 'g-1')).not.toBeNull();

    expect(await metric(e, 'gm_deletion_jobs_total')).toContain('gm_deletion_jobs_total{status="verified"} 1');
    // No alert: each cause is there from the start, at 0 (an alert on its increase sees the first).
    expect(await metric(e, 'gm_deletion_alerts_total')).toContain('gm_deletion_alerts_total{reason="deadline"} 0');
    expect(await metric(e, 'gm_deletion_alerts_total')).toContain('gm_deletion_alerts_total{reason="target_failed"} 0');
    expect(e.logs.records().filter((r) => r.msg === 'deletion job verified' && r.jobId === 'job-forget')).toHaveLength(1);
    expect(e.logs.lines.join('\n')).not.toContain('rebate plan');
    expect(fx.busWarnings).toEqual([]);
  });

  it('fails a job whose target never acknowledges once the deadline passes, loudly, and never verifies it later', async () => {
    const e = await setup([...EMBEDDED_TARGETS, 'vector']); // no worker serves 'vector'
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
    await deleteOne(e, 'd-2', 'job-d2');

    const waiting = await jobWhen(e, 'job-d2', 'acked by the running targets', (j) => j.evidence.length === EMBEDDED_TARGETS.length);
    expect(waiting.status).toBe('invalidating');
    expect(await commandsOf(e, 'PurgeMemory', 'job-d2')).toEqual([]);

    e.fx.clock.advance(DEADLINE_MS + 1);
    await expectLoudFailure(e, 'job-d2', 'deadline passed while invalidating', 'deadline');

    // The missing ack arrives late: the failed job stays failed, nothing is purged or verified.
    const [task] = (await tasksOf(e, 'job-d2')).filter((t) => t.target === 'vector');
    if (!task) throw new Error('no vector task was issued');
    const [late] = await e.fx.bus.produce([deletionAck(task, 'vector-store', e.fx.clock, { ok: true, ref: 'removed=1;remaining=0' })]);
    await committed(e, ORCHESTRATOR_GROUP, late);
    e.fx.clock.advance(VERIFY_RETRY_MS);
    await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
    const after = await job(e, 'job-d2');
    expect(after?.status).toBe('failed');
    expect(await commandsOf(e, 'PurgeMemory', 'job-d2')).toEqual([]);
    expect(targetsOf(await tasksOf(e, 'job-d2'))).not.toContain('verification');
    expect(await deadLettersFor(e, 'job-d2')).toHaveLength(1);
    // A failed job gets a receipt too (it says so): asked for once, and remembered until it exists.
    expect(targetsOf(await tasksOf(e, 'job-d2')).filter((t) => t === 'receipt')).toEqual(['receipt']);
    expect(await e.fx.state.receipts.pending()).toEqual([{ tenant: TENANT, jobId: 'job-d2' }]);
    expect(await metric(e, 'gm_deletion_jobs_total')).not.toContain('status="verified"');
    expect((await e.fx.state.records.get(TENANT, 'd-2'))?.status).toBe('tombstoned');
  });

  it('fails a job at once, with an alert, when a target acknowledges with status failed', async () => {
    const e = await setup([...EMBEDDED_TARGETS, 'summary']);
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
    // A summary store that cannot remove its copy says so in its ack.
    const summary = await e.fx.bus.subscribe({
      groupId: 'test.summary-target',
      topics: [TOPICS.deletionTasks],
      handler: async (message, ctx) => {
        const task = DeletionTask.parse(message.value);
        if (task.target === 'summary') ctx.send([deletionAck(task, 'summary-store', e.fx.clock, { ok: false, ref: 'remaining=1' })]);
      },
    });
    e.handles.push({ close: () => summary.close() });
    await deleteOne(e, 'd-3', 'job-d3');

    await expectLoudFailure(e, 'job-d3', 'target summary failed: remaining=1', 'target_failed');

    // The other targets' acks, before or after, change nothing: no purge, no verification.
    await eventually('every target acked', async () => {
      const acks = (await e.fx.readTopic(TOPICS.deletionAcks)).filter((m) => m.key === 'job-d3');
      return acks.length === EMBEDDED_TARGETS.length + 1;
    });
    await caughtUp(e, ORCHESTRATOR_GROUP, TOPICS.deletionAcks);
    expect((await job(e, 'job-d3'))?.status).toBe('failed');
    expect(await commandsOf(e, 'PurgeMemory', 'job-d3')).toEqual([]);
    expect(targetsOf(await tasksOf(e, 'job-d3'))).not.toContain('verification');
  });

  describe('verification that finds a leftover copy', () => {
    /** Deletes a record, lets the purge settle, then plants a stale index copy before the verifier starts. */
    async function leftoverInIndex(e: Env, id: string, jobId: string): Promise<void> {
      await start(e, ...PIPELINE, ...TARGET_WORKERS);
      await deleteOne(e, id, jobId);
      await jobWhen(e, jobId, 'verifying', (j) => j.status === 'verifying');
      // The purge must have reached the index-builder, or it would remove the planted copy.
      const purged = await eventually('MemoryPurged on the log', async () =>
        (await e.fx.readTopic(TOPICS.events)).find((m) => {
          const event = MemoryEvent.parse(m.value);
          return event.type === 'MemoryPurged' && event.data.id === id;
        }));
      await committed(e, INDEX_BUILDER_GROUP, purged);
      await committed(e, PROJECTOR_GROUP, purged);
      const meta = await e.fx.state.records.get(TENANT, id);
      if (!meta) throw new Error(`no record hash for ${id}`);
      await e.fx.index.upsert([toIndexDocument(meta, 'a stale replica copy')]);
      await start(e, 'verifier');
    }

    const attempts = (e: Env, jobId: string, n: number) =>
      jobWhen(e, jobId, `verification attempt ${n}`, (j) => j.progress.verificationAttempts >= n);

    it('keeps the job verifying with findings, retries after verifyRetryMs, and verifies once the copy is gone', async () => {
      const e = await setup();
      await leftoverInIndex(e, 'd-4', 'job-d4');

      const first = await attempts(e, 'job-d4', 1);
      const retryAt = new Date(e.fx.clock.ms + VERIFY_RETRY_MS).toISOString();
      expect(first).toMatchObject({ status: 'verifying', progress: { verificationAttempts: 1, findings: ['index:d-4'], nextVerificationAt: retryAt } });
      expect(first.evidence.find((x) => x.target === 'verification')?.status).toBe('failed');

      e.fx.clock.advance(VERIFY_RETRY_MS);
      const second = await attempts(e, 'job-d4', 2);
      expect(second).toMatchObject({ status: 'verifying', progress: { verificationAttempts: 2, findings: ['index:d-4'] } });

      await e.fx.index.remove(TENANT, ['d-4']);
      e.fx.clock.advance(VERIFY_RETRY_MS);
      const verified = await jobWhen(e, 'job-d4', 'verified', (j) => j.status === 'verified' || j.status === 'failed');
      expect(verified).toMatchObject({ status: 'verified', progress: { verificationAttempts: 3, findings: [] } });
      expect(verified.evidence.find((x) => x.target === 'verification')?.status).toBe('done');
      expect(targetsOf(await tasksOf(e, 'job-d4')).filter((t) => t === 'verification')).toHaveLength(3);
      expect(await commandsOf(e, 'PurgeMemory', 'job-d4')).toEqual(['d-4']);
    });

    it('fails the job at the deadline when the copy is never removed, naming what it found', async () => {
      const e = await setup();
      await leftoverInIndex(e, 'd-5', 'job-d5');
      await attempts(e, 'job-d5', 1);

      e.fx.clock.advance(DEADLINE_MS + 1);
      await expectLoudFailure(e, 'job-d5', 'deadline passed while verifying (index:d-5)', 'deadline');
      expect(await metric(e, 'gm_deletion_jobs_total')).not.toContain('status="verified"');
    });
  });

  it('opens one job for a redelivered MemoryRevocationRequested and applies each transition once', async () => {
    const e = await setup();
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
    await deleteOne(e, 'r-1', 'job-r1');

    // An at-least-once producer delivers the same event again: at once, and after the job is done.
    const original = await eventually('MemoryRevocationRequested on the log', async () =>
      (await e.fx.readTopic(TOPICS.events)).find((m) => MemoryEvent.parse(m.value).type === 'MemoryRevocationRequested'));
    const redeliver = async () => e.fx.bus.produce([{ topic: TOPICS.events, key: original.key, value: original.value, headers: original.headers }]);
    await redeliver();
    const verified = await jobWhen(e, 'job-r1', 'verified', (j) => j.status === 'verified' || j.status === 'failed');
    expect(verified.status).toBe('verified');
    const [again] = await redeliver();
    await committed(e, ORCHESTRATOR_GROUP, again);
    await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
    await projected(e);

    expect(await job(e, 'job-r1')).toEqual(verified);
    // A redelivery mid-job may re-send a command (crash safety, see the next test); the
    // commandId is the same, so write-admission applies it once: one event per transition.
    expect(new Set(await commandsOf(e, 'TombstoneMemory', 'job-r1'))).toEqual(new Set(['r-1']));
    expect(new Set(await commandsOf(e, 'PurgeMemory', 'job-r1'))).toEqual(new Set(['r-1']));
    const transitions = (await e.fx.readTopic(TOPICS.events))
      .map((m) => MemoryEvent.parse(m.value))
      .filter((ev) => ev.type === 'MemoryTombstoned' || ev.type === 'MemoryPurged')
      .map((ev) => ev.type);
    expect(transitions).toEqual(['MemoryTombstoned', 'MemoryPurged']);
    expect(new Set(targetsOf(await tasksOf(e, 'job-r1')))).toEqual(new Set([...EMBEDDED_TARGETS, 'verification', 'receipt']));
    expect(verified.evidence.map((x) => x.target).sort()).toEqual([...EMBEDDED_TARGETS, 'verification'].sort());
    expect(await metric(e, 'gm_deletion_jobs_total')).toContain('gm_deletion_jobs_total{status="verified"} 1');
    expect((await e.fx.state.records.get(TENANT, 'r-1'))?.status).toBe('purged');
    expect(e.logs.records().filter((r) => r.msg === 'deletion job opened' && r.jobId === 'job-r1')).toHaveLength(1);
  });

  // The job state is written before the bus commits the handler's sends. A crash in that
  // window (here: the handler ran, its transaction never committed) must not strand the job
  // (§8.1): the redelivered event re-sends what the recorded progress still needs.
  it('finishes a job whose first handling crashed before the bus commit', async () => {
    const e = await setup();
    const { fx } = e;
    await start(e, 'admission', 'projector', 'indexBuilder', ...TARGET_WORKERS, 'verifier');
    await deleteOne(e, 'c-1', 'job-c1');
    const requested = await eventually('MemoryRevocationRequested on the log', async () =>
      (await fx.readTopic(TOPICS.events)).find((m) => MemoryEvent.parse(m.value).type === 'MemoryRevocationRequested'));

    // The first orchestrator handles the event and dies before its commit: its sends are gone.
    const crashed = new DeletionOrchestrator({
      bus: fx.bus, state: fx.state, clock: fx.clock, metrics: e.metrics, log: e.log, targets: EMBEDDED_TARGETS,
      deadlineMs: DEADLINE_MS, verifyRetryMs: VERIFY_RETRY_MS, tickMs: 10,
    });
    await crashed.handle(requested, { send: () => undefined, sendWithPositions: () => undefined, onCommitted: () => undefined, onDiscarded: () => undefined });
    expect((await job(e, 'job-c1'))?.status).toBe('invalidating');

    // Its replacement gets the uncommitted event again.
    await start(e, 'orchestrator');
    await committed(e, ORCHESTRATOR_GROUP, requested);
    await caughtUp(e, ORCHESTRATOR_GROUP, TOPICS.events);
    expect(await commandsOf(e, 'TombstoneMemory', 'job-c1')).toEqual(['c-1']);
    const finished = await jobWhen(e, 'job-c1', 'finished', (j) => j.status === 'verified' || j.status === 'failed');
    expect(finished.status).toBe('verified');
  });

  it('revokes without purging: primary content is retained and verification accepts it', async () => {
    const e = await setup();
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
    await deleteOne(e, 'v-1', 'job-v1', 'RevokeMemory');

    const verified = await jobWhen(e, 'job-v1', 'verified', (j) => j.status === 'verified' || j.status === 'failed');
    expect(verified).toMatchObject({ status: 'verified', mode: 'revoke' });
    expect(verified.evidence.find((x) => x.target === 'primary')).toMatchObject({ status: 'done', ref: 'retained=1' });
    expect(evidenceOf(verified)).toContain('verification:done');
    await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
    await projected(e);

    expect(await commandsOf(e, 'TombstoneMemory', 'job-v1')).toEqual(['v-1']);
    expect(await commandsOf(e, 'PurgeMemory', 'job-v1')).toEqual([]);
    expect((await tasksOf(e, 'job-v1')).every((t) => t.retainPrimary)).toBe(true);
    // Retained for audit, unreadable: tombstoned, out of the index, content still in the primary store.
    expect((await e.fx.state.records.get(TENANT, 'v-1'))?.status).toBe('tombstoned');
    expect(await e.fx.state.contents.get(TENANT, 'v-1')).toBe('Customer v-1 keeps a spare key under the mat');
    expect(await e.fx.index.get(TENANT, 'v-1')).toBeNull();
    expect((await e.fx.state.tombstones.filterTombstoned(TENANT, ['v-1'])).size).toBe(1);
  });

  it('keeps the primary content of a subject on legal hold: tombstoned, derived copies removed, no purge, verified', async () => {
    const e = await setup();
    await e.fx.state.policies.apply({
      type: 'LegalHoldPlaced',
      data: { hold: { holdId: 'hold-1', tenant: TENANT, subjectId: 'cust-lh-1', reason: 'litigation 2026-17' } },
      metadata: { changeId: 'chg-hold-1', tenant: TENANT, requestedBy: { agentId: 'admin', principalId: 'carol' }, occurredAt: e.fx.clock.iso() },
    });
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
    await deleteOne(e, 'lh-1', 'job-lh1');

    const verified = await jobWhen(e, 'job-lh1', 'finished', (j) => j.status === 'verified' || j.status === 'failed');
    expect(verified).toMatchObject({ status: 'verified', mode: 'delete', legalHold: { holdId: 'hold-1', reason: 'litigation 2026-17' } });
    expect(verified.evidence.find((x) => x.target === 'primary')).toMatchObject({ status: 'done', ref: 'retained=1' });
    await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
    await projected(e);
    expect(await commandsOf(e, 'PurgeMemory', 'job-lh1')).toEqual([]);
    expect((await tasksOf(e, 'job-lh1')).every((t) => t.retainPrimary)).toBe(true);
    expect((await e.fx.state.records.get(TENANT, 'lh-1'))?.status).toBe('tombstoned');
    expect(await e.fx.state.contents.get(TENANT, 'lh-1')).toBe('Customer lh-1 keeps a spare key under the mat');
    expect(await e.fx.index.get(TENANT, 'lh-1')).toBeNull();
    // The log line names the hold by id; its reason stays out of the logs.
    expect(e.logs.records().find((r) => r.msg === 'deletion job opened' && r.jobId === 'job-lh1')).toMatchObject({ legalHold: 'hold-1' });
    expect(e.logs.lines.join('\n')).not.toContain('litigation');
  });

  describe('legal holds in each order of hold, job and release', () => {
    const purgedAfterRelease = async (e: Env, jobId: string, holdId: string, recordIds: string[]): Promise<DeletionJob> => {
      const continued = await jobWhen(e, releaseJobOf(jobId, holdId), 'finished', (j) => j.status === 'verified' || j.status === 'failed');
      expect(continued).toMatchObject({ status: 'verified', continues: { jobId, holdId }, recordIds, requestedBy: { agentId: 'admin', principalId: 'dora' } });
      expect(continued.legalHold).toBeUndefined();
      expect(await commandsOf(e, 'PurgeMemory', continued.jobId)).toEqual([...recordIds].sort());
      await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
      await projected(e);
      for (const id of recordIds) {
        expect((await e.fx.state.records.get(TENANT, id))?.status, id).toBe('purged');
        expect(await e.fx.state.contents.get(TENANT, id), id).toBeNull();
      }
      return continued;
    };

    it('hold, then job, then release: the job keeps the content, and the release purges it in a job of its own', async () => {
      const e = await setup();
      await e.fx.state.policies.apply(holdChange(e, 'hold-a', 'cust-ha-1'));
      await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
      await deleteOne(e, 'ha-1', 'job-ha');
      const kept = await jobWhen(e, 'job-ha', 'finished', (j) => j.status === 'verified' || j.status === 'failed');
      expect(kept).toMatchObject({ status: 'verified', legalHold: { holdId: 'hold-a' } });
      expect(await e.fx.state.contents.get(TENANT, 'ha-1')).not.toBeNull();

      await release(e, 'hold-a');
      const continued = await purgedAfterRelease(e, 'job-ha', 'hold-a', ['ha-1']);
      expect((await job(e, 'job-ha'))?.continuedBy).toBe(continued.jobId);
      // Released once: a redelivered release opens nothing more.
      expect(await e.fx.state.jobs.heldBy(TENANT, 'hold-a')).toEqual([]);
    });

    it('job, then hold before its purge, then release: the purge waits for the release', async () => {
      const e = await setup();
      // The targets are not running yet: the job tombstones and waits for their acks.
      await start(e, ...PIPELINE);
      await deleteOne(e, 'hb-1', 'job-hb');
      await jobWhen(e, 'job-hb', 'tombstoned', (j) => j.progress.tombstoned.includes('hb-1'));
      await e.fx.state.policies.apply(holdChange(e, 'hold-b', 'cust-hb-1'));
      await start(e, ...TARGET_WORKERS, 'verifier');
      const kept = await jobWhen(e, 'job-hb', 'finished', (j) => j.status === 'verified' || j.status === 'failed');
      expect(kept).toMatchObject({ status: 'verified', legalHold: { holdId: 'hold-b', reason: 'litigation 2026-31' } });
      await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
      expect(await commandsOf(e, 'PurgeMemory', 'job-hb')).toEqual([]);
      expect((await e.fx.state.records.get(TENANT, 'hb-1'))?.status).toBe('tombstoned');
      expect(e.logs.records().find((r) => r.msg === 'legal hold placed during the deletion job: its content is kept')).toMatchObject({ jobId: 'job-hb', legalHold: 'hold-b' });

      await release(e, 'hold-b');
      await purgedAfterRelease(e, 'job-hb', 'hold-b', ['hb-1']);
    });

    it('hold, job, a second forget while held, then release: the forget takes the kept record in, and the release purges both', async () => {
      const e = await setup();
      await e.fx.state.policies.apply(holdChange(e, 'hold-c', 'cust-hc-1'));
      await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
      await deleteOne(e, 'hc-1', 'job-hc');
      await jobWhen(e, 'job-hc', 'verified', (j) => j.status === 'verified');
      const reply = await send(e, MemoryCommand.parse({ type: 'ForgetSubject', data: { jobId: 'job-hc-forget', within: { kind: 'tenant' } }, metadata: meta(e, 'cmd-hc-forget', 'cust-hc-1') }));
      expect(reply).toMatchObject({ outcome: 'accepted', result: { jobId: 'job-hc-forget' } });
      const forgot = await jobWhen(e, 'job-hc-forget', 'finished', (j) => j.status === 'verified' || j.status === 'failed');
      // The record the first job kept is in the forget (it was out of reach before): kept again, for the hold.
      expect(forgot).toMatchObject({ status: 'verified', mode: 'forget', recordIds: ['hc-1'], legalHold: { holdId: 'hold-c' } });

      await release(e, 'hold-c');
      await purgedAfterRelease(e, 'job-hc', 'hold-c', ['hc-1']);
      await purgedAfterRelease(e, 'job-hc-forget', 'hold-c', ['hc-1']);
    });
  });

  it('asks again for the receipt of a finished job until one is stored', async () => {
    const e = await setup();
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier'); // no receipt signer runs
    await deleteOne(e, 'rr-1', 'job-rr1');
    await jobWhen(e, 'job-rr1', 'verified', (j) => j.status === 'verified');
    const receiptTasks = async () => (await tasksOf(e, 'job-rr1')).filter((t) => t.target === 'receipt').length;
    await eventually('the first receipt task', async () => (await receiptTasks()) === 1);
    expect(await e.fx.state.receipts.pending()).toEqual([{ tenant: TENANT, jobId: 'job-rr1' }]);

    e.fx.clock.advance(2_001);
    await eventually('the receipt asked again', async () => (await receiptTasks()) === 2);
    // Once a receipt is stored, the job is no longer pending and nobody asks again.
    await e.fx.state.receipts.putOnce({ receiptId: 'rcpt_x', jobId: 'job-rr1', tenant: TENANT, kid: 'k', jws: 'a.b.c' });
    expect(await e.fx.state.receipts.pending()).toEqual([]);
    e.fx.clock.advance(2_001);
    await caughtUp(e, ORCHESTRATOR_GROUP, TOPICS.deletionAcks);
    expect(await receiptTasks()).toBe(2);
  });

  it('forgets a subject whose record was revoked earlier: the retained content is purged after all', async () => {
    const e = await setup();
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier');
    await deleteOne(e, 'rf-1', 'job-rf-revoke', 'RevokeMemory');
    await jobWhen(e, 'job-rf-revoke', 'verified', (j) => j.status === 'verified');
    expect(await e.fx.state.contents.get(TENANT, 'rf-1')).not.toBeNull();

    const reply = await send(e, MemoryCommand.parse({ type: 'ForgetSubject', data: { jobId: 'job-rf-forget', within: { kind: 'tenant' } }, metadata: meta(e, 'cmd-rf-forget', 'cust-rf-1') }));
    expect(reply).toMatchObject({ outcome: 'accepted', result: { jobId: 'job-rf-forget' } });
    const forgotten = await jobWhen(e, 'job-rf-forget', 'finished', (j) => j.status === 'verified' || j.status === 'failed');
    expect(forgotten).toMatchObject({ status: 'verified', mode: 'forget', recordIds: ['rf-1'] });
    // Already tombstoned by the revocation: no second tombstone command, straight to fan-out.
    expect(await commandsOf(e, 'TombstoneMemory', 'job-rf-forget')).toEqual([]);
    await caughtUp(e, WRITE_ADMISSION_GROUP, TOPICS.commands);
    await projected(e);
    expect(await e.fx.state.contents.get(TENANT, 'rf-1')).toBeNull();
    expect((await e.fx.state.records.get(TENANT, 'rf-1'))?.status).toBe('purged');
  });

  it('restores the jobs and receipts a lost job store held, from the log; the open job then finishes with one receipt per job', async () => {
    const e = await setup();
    const { fx } = e;
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier', 'signer');
    await deleteOne(e, 'rs-1', 'job-rs1');
    // A delete under legal hold keeps the content; the release purges it in a job of its own.
    const hold = PolicyChange.parse(holdChange(e, 'hold-rs', 'cust-rs-2'));
    await fx.bus.produce([{ topic: TOPICS.policyChanges, key: TENANT, value: hold }]);
    await fx.state.policies.apply(hold);
    await deleteOne(e, 'rs-2', 'job-rs2');
    await jobWhen(e, 'job-rs2', 'verified', (j) => j.status === 'verified');
    // The restore places holds and releases in time (the fixture's clock stands still otherwise).
    fx.clock.advance(1_000);
    await release(e, 'hold-rs');
    const finished = ['job-rs1', 'job-rs2', releaseJobOf('job-rs2', 'hold-rs')];
    for (const jobId of finished) await jobWhen(e, jobId, 'verified', (j) => j.status === 'verified');
    const receiptsOnTopic = async () => (await fx.readTopic(TOPICS.deletionReceipts)).map((m) => SignedReceipt.parse(m.value).jobId).sort();
    await eventually('three receipts published', async () => (await receiptsOnTopic()).length === 3);
    // The copies' services stop: a third job tombstones its record and waits for their acks.
    await stopAll(e);
    await start(e, ...PIPELINE);
    await deleteOne(e, 'rs-3', 'job-rs3');
    await jobWhen(e, 'job-rs3', 'tombstoned', (j) => j.progress.tombstoned.includes('rs-3'));
    await stopAll(e);

    const jobIds = [...finished, 'job-rs3'];
    const before = new Map(await Promise.all(jobIds.map(async (id) => [id, await job(e, id)] as const)));
    const receiptsBefore = await Promise.all(finished.map((id) => fx.state.receipts.get(TENANT, id)));
    // The disaster: every job, index and receipt the store held, gone.
    for (const prefix of ['gm:job', 'gm:receipt']) await fx.state.kv.del(await fx.state.kv.keys(prefix));
    expect(await job(e, 'job-rs1')).toBeNull();

    const settings = { targets: e.targets, deadlineMs: DEADLINE_MS, verifyRetryMs: VERIFY_RETRY_MS };
    expect(await restoreDeletionJobs(fx.state, fx.bus, settings)).toEqual({ jobs: 4, restored: 4, open: 1, receipts: 3, receiptsAsked: 0 });
    for (const id of jobIds) expect(await job(e, id), id).toEqual(before.get(id));
    expect(await Promise.all(finished.map((id) => fx.state.receipts.get(TENANT, id)))).toEqual(receiptsBefore);
    for (const id of finished) expect(await fx.state.receipts.isPublished(TENANT, id), id).toBe(true);
    expect((await fx.state.jobs.open()).map((j) => j.jobId)).toEqual(['job-rs3']);
    // The release was handled: a later release of the same hold id starts nothing again.
    expect(await fx.state.jobs.heldBy(TENANT, 'hold-rs')).toEqual([]);
    // What the store holds stays: a second restore writes nothing.
    expect(await restoreDeletionJobs(fx.state, fx.bus, settings)).toMatchObject({ restored: 0, receipts: 0 });

    // The deployment again: the open job resumes and finishes, and no job gets a second receipt.
    await start(e, ...PIPELINE, ...TARGET_WORKERS, 'verifier', 'signer');
    fx.clock.advance(2_001);
    await jobWhen(e, 'job-rs3', 'verified', (j) => j.status === 'verified');
    await eventually('the fourth receipt', async () => (await receiptsOnTopic()).length === 4);
    await caughtUp(e, ORCHESTRATOR_GROUP, TOPICS.deletionAcks);
    expect(await receiptsOnTopic()).toEqual([...jobIds].sort());
  });
});
