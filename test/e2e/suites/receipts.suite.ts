import { execFile } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '@gm/bus';
import {
  DeletionReceipt, SignedReceipt, TOPICS, subjectKey, type DeletionAck, type DeletionTask, type MemoryCommand, type ReceiptPublicKey,
} from '@gm/contracts';
import { verifyReceipt } from '@gm/policy/receipts';
import { eventually, expectKeyEvidence, memory, STARTUP_MS, type TestRuntime } from '../harness.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../apps/memctl/src/cli.ts', import.meta.url));
/** memctl runs as its own Node process with tsx (seconds on a busy machine). */
const CLI_MS = 120_000;
const SIGNER_GROUP = 'receipt-verifier.receipts';
const ORCHESTRATOR_GROUP = 'deletion-orchestrator';

/** A bus client on the runtime's log, for what has no HTTP route (a revocation, a redelivered task). */
export interface BusAccess {
  bus: Bus;
  close(): Promise<void>;
}

interface ReceiptAnswer {
  receipt: string;
  payload: DeletionReceipt;
  openings?: Array<{ recordId: string; opening: string }>;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const decodePayload = (jws: string) => Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8');

/**
 * Signed deletion receipts and legal holds (§8.4, §6.8) through the HTTP API of a running
 * runtime (either kind), verified offline with the published public key and with memctl.
 */
export const receiptsSuite = <R extends TestRuntime>(start: () => Promise<R>, busOf: (rt: R) => Promise<BusAccess>) =>
  describe('deletion receipts and legal holds over the API', () => {
    let rt: R;
    let access: BusAccess;
    let writer: string;
    let admin: string;
    let keys: ReceiptPublicKey[];
    let tmp: string;

    beforeAll(async () => {
      rt = await start();
      access = await busOf(rt);
      tmp = mkdtempSync(path.join(os.tmpdir(), 'gm-receipts-'));
      writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
      admin = await rt.issue({ agentId: 'compliance-desk', principal: { id: 'carol', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'search', 'read'] });
      const published = await rt.api<{ keys: ReceiptPublicKey[] }>('GET', '/v1/receipt-keys');
      expect(published.status).toBe(200);
      keys = published.body.keys;
    }, STARTUP_MS);
    afterAll(async () => {
      await access?.close();
      await rt?.close();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }, STARTUP_MS);

    const write = async (id: string, subjectId: string, content: string) => {
      const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id, subjectId, content }) });
      expect(res.status).toBe(201);
    };
    const finished = (jobId: string) =>
      eventually(`job ${jobId} finished`, async () => {
        const res = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: admin });
        return res.body.status === 'verified' || res.body.status === 'failed' ? res.body : undefined;
      }, 30_000);
    const receiptOf = (jobId: string, token = admin) =>
      eventually(`receipt of ${jobId}`, async () => {
        const res = await rt.api<ReceiptAnswer>('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token });
        return res.status === 200 ? res.body : undefined;
      }, 30_000);
    const memctl = (...args: string[]) =>
      run(process.execPath, ['--import', 'tsx', CLI, ...args, '--url', rt.url, '--data-dir', path.join(tmp, 'no-data-dir')])
        .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }))
        .catch((err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));

    it('publishes the receipt public key as a JWKS without a capability', () => {
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
      expect(keys[0]?.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });

    it('signs one receipt for a verified deletion: ids and content commitments, no content nor its hash, purged, and the event log named', async () => {
      const content = 'Receipt 7 Umbrella ledger sits in vault nine';
      await write('rc-del-1', 'cust-rc1', content);
      const del = await rt.api('DELETE', '/v1/memories/rc-del-1', { token: writer });
      expect(del.status).toBe(202);
      const jobId = String(del.body.jobId);
      expect((await finished(jobId)).status).toBe('verified');
      const answer = await receiptOf(jobId);

      const { payload, kid } = await verifyReceipt(answer.receipt, keys);
      expect(kid).toBe(keys[0]?.kid);
      expect(answer.payload).toEqual(payload);
      expect(payload).toMatchObject({
        jobId, tenant: 'acme', mode: 'delete', subjectId: 'cust-rc1', recordIds: ['rc-del-1'],
        contentCommitments: [{ recordId: 'rc-del-1', commitment: expect.stringMatching(/^[0-9a-f]{64}$/) }],
        requestedBy: { agentId: 'support-bot', principalId: 'alice' },
        status: 'verified', retention: 'purged', eventLog: { holdsContent: false },
        replay: { findings: [] },
      });
      expect(payload.retentionReason).toBeUndefined();
      expect(payload.targets.map((t) => `${t.target}:${t.status}`)).toEqual(
        expect.arrayContaining(['primary:done', 'keyword:done', 'retrieval_cache:done', 'evidence_packet:done', 'key:done']),
      );
      // Crypto-shredding: the record's data key is gone and its one sealed event no longer opens.
      expectKeyEvidence(rt, payload.targets.find((t) => t.target === 'key')?.ref, 'data_keys=1;keks=0;keks_kept=0;events=1;undecryptable=1', 1);
      expect(payload.replay.probes).toBeGreaterThan(0);
      // No content anywhere in what was signed, nor in the logs; no hash of it either.
      for (const word of ['Umbrella', 'ledger', 'vault nine', sha256(content)]) {
        expect(decodePayload(answer.receipt)).not.toContain(word);
        expect(rt.logs.lines.join('\n')).not.toContain(word);
      }
      expect(payload.contentHashes).toBeUndefined();
      // The administrator reads the receipt, not its openings: those are the requester's.
      expect(answer.openings).toBeUndefined();
      expect(await rt.state.contents.get('acme', 'rc-del-1')).toBeNull();

      // The same receipt as the bare JWS (application/jose); the requester may fetch it too.
      const jose = await fetch(`${rt.url}/v1/deletion-jobs/${jobId}/receipt`, { headers: { authorization: `Bearer ${writer}`, accept: 'application/jose' } });
      expect(jose.status).toBe(200);
      expect(jose.headers.get('content-type')).toMatch(/^application\/jose/);
      expect(await jose.text()).toBe(answer.receipt);
    });

    it('answers 404 for the receipt of an unknown job, of another requester or of another tenant', async () => {
      await write('rc-own-1', 'cust-own', 'Owner test record');
      const del = await rt.api('DELETE', '/v1/memories/rc-own-1', { token: writer });
      const jobId = String(del.body.jobId);
      await receiptOf(jobId);
      // A job is its requesting principal's: another principal — even through the same agent id — sees none of it.
      const otherAgent = await rt.issue({ agentId: 'support-bot', principal: { id: 'mallory', kind: 'person' } });
      const otherTenant = await rt.issue({ agentId: 'compliance-desk', tenant: 'globex', scopes: [{ kind: 'tenant', id: 'globex' }], actions: ['admin'] });
      for (const [route, token] of [
        ['/v1/deletion-jobs/no-such-job/receipt', admin], [`/v1/deletion-jobs/${jobId}/receipt`, otherAgent], [`/v1/deletion-jobs/${jobId}/receipt`, otherTenant],
      ] as const) {
        const res = await rt.api('GET', route, { token });
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('MEM_NOT_FOUND');
      }
      expect((await rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`)).status).toBe(401);
    });

    it('says access_revoked_retained for a revocation: content kept for audit', async () => {
      await write('rc-rev-1', 'cust-rev', 'Revocation keeps this sentence for audit');
      const jobId = 'job-rc-rev-1';
      const command: MemoryCommand = {
        type: 'RevokeMemory',
        data: { id: 'rc-rev-1', jobId },
        metadata: {
          commandId: 'rc-revoke-1', tenantId: 'acme', subjectId: 'cust-rev', now: new Date(rt.now()).toISOString(), policyRevision: 0,
          actor: { agentId: 'compliance-desk', principalId: 'carol', principalKind: 'person', runId: 'run-rc', purpose: 'support' },
        },
      };
      await access.bus.produce([{ topic: TOPICS.commands, key: subjectKey('acme', 'cust-rev'), value: command }]);
      expect((await finished(jobId)).status).toBe('verified');
      const { payload } = await verifyReceipt((await receiptOf(jobId)).receipt, keys);
      expect(payload).toMatchObject({
        mode: 'revoke', status: 'verified', retention: 'access_revoked_retained', retentionReason: 'revoked: content retained for audit',
        eventLog: { holdsContent: true },
      });
      expect(await rt.state.contents.get('acme', 'rc-rev-1')).toBe('Revocation keeps this sentence for audit');
      expect((await rt.api('GET', '/v1/memories/rc-rev-1', { token: writer })).status).toBe(404);
    });

    it('keeps the content of a subject on legal hold: reads deny at once, the job verifies, the receipt names the hold', async () => {
      const reason = 'litigation 2026-17 hold';
      await write('rc-hold-1', 'cust-hold', 'Held record about the Zanzibar contract');
      await write('rc-hold-2', 'cust-hold', 'Second held record mentions Zanzibar shipping');
      const hold = await rt.api('POST', '/v1/legal-holds', { token: admin, body: { holdId: 'hold-rc-1', subjectId: 'cust-hold', reason } });
      expect(hold.status).toBe(201);

      const forget = await rt.api('POST', '/v1/subjects/cust-hold/forget', { token: writer, body: {} });
      expect(forget.status).toBe(202);
      // Denied at once, before any deletion work.
      expect((await rt.api('GET', '/v1/memories/rc-hold-1', { token: writer })).status).toBe(404);
      expect((await rt.api('POST', '/v1/search', { token: writer, body: { query: 'Zanzibar' } })).body.items).toEqual([]);

      const jobId = String(forget.body.jobId);
      const job = await finished(jobId);
      expect(job.status).toBe('verified');
      expect(job.legalHold).toEqual({ holdId: 'hold-rc-1', reason });
      // The primary copy is retained; every derived copy is gone.
      expect(await rt.state.contents.get('acme', 'rc-hold-1')).toBe('Held record about the Zanzibar contract');
      expect(await rt.state.contents.count('acme', ['rc-hold-1', 'rc-hold-2'])).toBe(2);
      expect(await rt.index.get('acme', 'rc-hold-1')).toBeNull();
      expect((await rt.api('GET', '/v1/memories/rc-hold-2', { token: admin })).status).toBe(404);

      const { payload } = await verifyReceipt((await receiptOf(jobId)).receipt, keys);
      expect(payload).toMatchObject({
        mode: 'forget', status: 'verified', recordIds: ['rc-hold-1', 'rc-hold-2'],
        retention: 'access_revoked_retained', retentionReason: 'legal hold hold-rc-1',
        legalHold: { holdId: 'hold-rc-1' }, eventLog: { holdsContent: true },
      });
      // The hold's reason is for those who may read holds: not in the receipt the requester reads.
      expect(decodePayload((await receiptOf(jobId)).receipt)).not.toContain(reason);
      expect(payload.targets.find((t) => t.target === 'primary')?.ref).toMatch(/^retained=2/);
      // The hold's reason is in the job for the admin, never in the logs.
      expect(rt.logs.lines.join('\n')).not.toContain(reason);
      expect(rt.logs.lines.join('\n')).not.toContain('Zanzibar');

      // Released: what the hold kept is purged, in a job of its own with a receipt of its own.
      expect((await rt.api('DELETE', '/v1/legal-holds/hold-rc-1', { token: admin })).status).toBe(202);
      const continuedBy = await eventually('the kept job points to its purge', async () => {
        const res = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: admin });
        return typeof res.body.continuedBy === 'string' ? res.body.continuedBy : undefined;
      }, 30_000);
      const purge = await finished(continuedBy);
      expect(purge).toMatchObject({ status: 'verified', mode: 'forget', recordIds: ['rc-hold-1', 'rc-hold-2'], continues: { jobId, holdId: 'hold-rc-1' } });
      expect(purge.legalHold).toBeUndefined();
      const purged = await verifyReceipt((await receiptOf(continuedBy)).receipt, keys);
      expect(purged.payload).toMatchObject({ jobId: continuedBy, retention: 'purged', eventLog: { holdsContent: false } });
      expect(await rt.state.contents.count('acme', ['rc-hold-1', 'rc-hold-2'])).toBe(0);
    });

    it('verifies a receipt offline with memctl and rejects a tampered one', async () => {
      await write('rc-cli-1', 'cust-cli', 'Memctl receipt record');
      const del = await rt.api('DELETE', '/v1/memories/rc-cli-1', { token: writer });
      const jobId = String(del.body.jobId);
      await receiptOf(jobId);
      const file = path.join(tmp, 'receipt.jws');
      const got = await memctl('receipt', 'get', '--job', jobId, '--out', file, '--token', admin);
      expect(got.code, got.stderr).toBe(0);

      const ok = await memctl('receipt', 'verify', file, '--key', `${rt.url}/v1/receipt-keys`);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain('signature:   valid');
      expect(ok.stdout).toContain(`for job ${jobId}`);
      expect(ok.stdout).toContain('retention:   purged');
      expect(ok.stdout).toContain('event log:   ciphertext only, its keys destroyed');

      // Claim more than is true: same signature, edited payload.
      const [header, body, signature] = (await memctl('receipt', 'get', '--job', jobId, '--token', admin)).stdout.trim().split('.');
      const edited = JSON.parse(Buffer.from(body ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
      edited.retention = 'purged';
      edited.targets = [];
      const tampered = path.join(tmp, 'tampered.jws');
      writeFileSync(tampered, `${header}.${Buffer.from(JSON.stringify(edited)).toString('base64url')}.${signature}\n`);
      const bad = await memctl('receipt', 'verify', tampered, '--key', `${rt.url}/v1/receipt-keys`);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('does NOT verify');
      expect(bad.stdout).not.toContain('signature:   valid');

      // Another key: the genuine receipt does not verify either.
      const otherKey = path.join(tmp, 'other.jwk.json');
      writeFileSync(otherKey, JSON.stringify({ ...keys[0], kid: undefined, x: Buffer.alloc(32, 7).toString('base64url') }));
      const wrongKey = await memctl('receipt', 'verify', file, '--key', otherKey);
      expect(wrongKey.code).toBe(1);
    }, CLI_MS);

    it('after a verified forget, leaves no guessing oracle: no hash in the receipt, openings for the requester only, history and replayed keys answer alike', async () => {
      const content = 'Customer 77 has HIV and sees Dr Quillon weekly';
      const key = 'oracle-key-1';
      const body = memory({ id: 'rc-orc-1', subjectId: 'cust-orc', content });
      const first = await rt.api('POST', '/v1/memories', { token: writer, body, headers: { 'idempotency-key': key } });
      expect(first.status).toBe(201);
      // Before the forget a wrong guess under the key is refused: that is the oracle this closes.
      const wrongBefore = await rt.api('POST', '/v1/memories', { token: writer, body: { ...body, content: 'Customer 77 has flu' }, headers: { 'idempotency-key': key } });
      expect([wrongBefore.status, wrongBefore.body.code]).toEqual([422, 'MEM_IDEMPOTENCY_MISMATCH']);

      const forget = await rt.api('POST', '/v1/subjects/cust-orc/forget', { token: writer, body: {} });
      expect(forget.status).toBe(202);
      const jobId = String(forget.body.jobId);
      const job = await finished(jobId);
      // A failed job names why: its failure and each target's evidence.
      expect(job.status, JSON.stringify({ failureReason: job.failureReason, evidence: job.evidence })).toBe('verified');
      const mine = await receiptOf(jobId, writer);
      const { payload } = await verifyReceipt(mine.receipt, keys);
      expect(payload).toMatchObject({ mode: 'forget', recordIds: ['rc-orc-1'], retention: 'purged' });

      // No sha256 of the content anywhere: in the signed payload, the topic's message, the answers.
      const digest = sha256(content);
      const digestB64 = Buffer.from(digest, 'hex').toString('base64');
      // The receipt is stored before its topic transaction commits (Kafka): wait until the topic has it.
      const published = await eventually('the receipt published on deletion.receipts', async () => {
        const found: string[] = [];
        for await (const m of access.bus.readAll(TOPICS.deletionReceipts)) if (m.key === jobId) found.push(JSON.stringify(m.value));
        return found.length > 0 ? found : undefined;
      });
      expect(published).toHaveLength(1);
      for (const text of [decodePayload(mine.receipt), JSON.stringify(mine), ...published, JSON.stringify(await receiptOf(jobId))]) {
        for (const leak of [digest, digest.toUpperCase(), digestB64, Buffer.from(digest, 'hex').toString('base64url'), 'Quillon']) expect(text).not.toContain(leak);
      }
      // The requester (alice) gets the opening and can show exactly this content was covered; nobody else gets it.
      const commitment = payload.contentCommitments?.[0]?.commitment;
      const opening = mine.openings?.find((o) => o.recordId === 'rc-orc-1')?.opening;
      expect(opening).toMatch(/^[0-9a-f]{64}$/);
      expect(commitment).toBe(createHmac('sha256', Buffer.from(opening ?? '', 'hex')).update(Buffer.from(digest, 'hex')).digest('hex'));
      expect(commitment).not.toBe(createHmac('sha256', Buffer.from(opening ?? '', 'hex')).update(Buffer.from(sha256('Customer 77 has flu'), 'hex')).digest('hex'));
      expect(decodePayload(mine.receipt)).not.toContain(opening ?? '-');
      expect(published.join('\n')).not.toContain(opening ?? '-');
      expect(rt.logs.lines.join('\n')).not.toContain(opening ?? '-');
      expect((await receiptOf(jobId, admin)).openings).toBeUndefined();
      const sameAgentOtherPrincipal = await rt.issue({ agentId: 'support-bot', principal: { id: 'mallory', kind: 'person' }, actions: ['request_delete', 'search'] });
      const theirs = await rt.api<ReceiptAnswer>('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: sameAgentOtherPrincipal });
      expect(theirs.body.openings).toBeUndefined();

      // memctl: the requester checks its content file against the receipt, offline; a guess does not open it.
      const answerFile = path.join(tmp, 'forget-receipt.json');
      expect((await memctl('receipt', 'get', '--job', jobId, '--json', '--out', answerFile, '--token', writer)).code).toBe(0);
      const right = path.join(tmp, 'content.txt');
      const guess = path.join(tmp, 'guess.txt');
      writeFileSync(right, content);
      writeFileSync(guess, 'Customer 77 has flu');
      const opened = await memctl('receipt', 'verify', answerFile, '--key', `${rt.url}/v1/receipt-keys`, '--content-file', right);
      expect(opened.code, opened.stderr).toBe(0);
      expect(opened.stdout).toContain('content:     matches the commitment of record rc-orc-1');
      const guessed = await memctl('receipt', 'verify', answerFile, '--key', `${rt.url}/v1/receipt-keys`, '--content-file', guess);
      expect(guessed.code).toBe(1);
      expect(guessed.stderr).toContain('does NOT match');
      const bare = path.join(tmp, 'forget-receipt.jws');
      writeFileSync(bare, `${mine.receipt}\n`);
      const withOpening = await memctl('receipt', 'verify', bare, '--key', `${rt.url}/v1/receipt-keys`, '--content-file', right, '--opening', opening ?? '');
      expect(withOpening.code, withOpening.stderr).toBe(0);

      // History: the same 404 as an id that never existed (§6.4).
      const normalise = (text: string) => text.replace(/"requestId":"[^"]+"/, '"requestId":"-"');
      const gone = await rt.api('GET', '/v1/memories/rc-orc-1/history', { token: writer });
      const never = await rt.api('GET', '/v1/memories/rc-never-was/history', { token: writer });
      expect(gone.status).toBe(404);
      expect(normalise(gone.text)).toBe(normalise(never.text));

      // A replayed Idempotency-Key answers the same whether the guess is right or wrong.
      const replay = async (guessed: string) => {
        const res = await rt.api('POST', '/v1/memories', { token: writer, body: { ...body, content: guessed }, headers: { 'idempotency-key': key } });
        return `${res.status} ${normalise(res.text)}`;
      };
      const rightAnswer = await replay(content);
      expect(await replay('Customer 77 has flu')).toBe(rightAnswer);
      expect(await replay('Customer 77 has HIV and sees Dr Quillon monthly')).toBe(rightAnswer);
      // And nothing was written again: the id stays forgotten.
      expect((await rt.api('GET', '/v1/memories/rc-orc-1', { token: writer })).status).toBe(404);
      expect(await rt.state.contents.get('acme', 'rc-orc-1')).toBeNull();
      // The record hash keeps that the id was purged, not its content's hash.
      expect(JSON.stringify(await rt.state.records.get('acme', 'rc-orc-1'))).not.toContain(digest);
    }, CLI_MS);

    it('makes exactly one receipt per job when the receipt task and the verification ack are delivered again', async () => {
      await write('rc-dup-1', 'cust-dup', 'Duplicate delivery record');
      const del = await rt.api('DELETE', '/v1/memories/rc-dup-1', { token: writer });
      const jobId = String(del.body.jobId);
      const first = await receiptOf(jobId);
      const stored = await rt.state.receipts.get('acme', jobId);
      expect(stored?.jws).toBe(first.receipt);

      const { bus } = access;
      const task: DeletionTask = {
        jobId, tenantId: 'acme', target: 'receipt', recordIds: ['rc-dup-1'], retainPrimary: false, issuedAt: new Date(rt.now()).toISOString(),
      };
      const ack: DeletionAck = {
        jobId, tenantId: 'acme', target: 'verification', findings: [],
        evidence: { target: 'verification', status: 'done', completedAt: new Date(rt.now()).toISOString(), verifier: 'receipt-verifier', ref: 'probes=1;findings=0' },
      };
      const [taskAt] = await bus.produce([{ topic: TOPICS.deletionTasks, key: jobId, value: task }, { topic: TOPICS.deletionTasks, key: jobId, value: task }]);
      const [ackAt] = await bus.produce([{ topic: TOPICS.deletionAcks, key: jobId, value: ack }]);
      if (!taskAt || !ackAt) throw new Error('nothing produced');
      const endOfTasks = { ...taskAt, offset: taskAt.offset + 1 };
      expect(await bus.waitForCommitted(SIGNER_GROUP, endOfTasks, 30_000)).toBe(true);
      expect(await bus.waitForCommitted(ORCHESTRATOR_GROUP, ackAt, 30_000)).toBe(true);
      // Whatever the orchestrator sent for the ack (a stray second receipt task, keyed by the job) is
      // on the tasks partition by now: wait until the signer has handled everything up to its end.
      const tasksEnd = (await bus.endOffsets(TOPICS.deletionTasks))[taskAt.partition] ?? 0;
      expect(await bus.waitForCommitted(SIGNER_GROUP, { ...taskAt, offset: tasksEnd - 1 }, 30_000)).toBe(true);

      expect((await rt.state.receipts.get('acme', jobId))?.jws).toBe(first.receipt);
      const published: SignedReceipt[] = [];
      for await (const m of bus.readAll(TOPICS.deletionReceipts)) {
        if (m.key === jobId) published.push(SignedReceipt.parse(m.value));
      }
      expect(published.map((p) => p.jws)).toEqual([first.receipt]);
    });

    it('lists deletion jobs: the tenant\'s for an administrator, its own for a requester, by status and time, page by page', async () => {
      // Past every earlier test's job (the embedded clock stands still between steps).
      await rt.advance(5);
      const since = new Date(rt.now()).toISOString();
      const other = await rt.issue({ agentId: 'other-bot', principal: { id: 'dora', kind: 'person' } });
      const jobs: string[] = [];
      for (const [i, token] of [writer, writer, other].entries()) {
        const id = `rc-list-${i}`;
        expect((await rt.api('POST', '/v1/memories', { token, body: memory({ id, subjectId: 'cust-list', content: `Listed record ${i} about Kestrel` }) })).status).toBe(201);
        const del = await rt.api('DELETE', `/v1/memories/${id}`, { token });
        jobs.push(String(del.body.jobId));
        await finished(String(del.body.jobId));
      }
      type Page = { items: Array<{ jobId: string; status: string }>; nextCursor?: string; code?: string };
      const list = (token: string, query: string) => rt.api<Page>('GET', `/v1/deletion-jobs?${query}`, { token });
      // The administrator pages through the tenant's jobs since then, two at a time, oldest first.
      const first = await list(admin, `since=${encodeURIComponent(since)}&limit=2`);
      expect(first.status).toBe(200);
      expect(first.body.items.map((j) => j.jobId)).toEqual(jobs.slice(0, 2));
      const second = await list(admin, `since=${encodeURIComponent(since)}&limit=2&cursor=${first.body.nextCursor}`);
      expect(second.body.items.map((j) => j.jobId)).toEqual(jobs.slice(2));
      expect(second.body.nextCursor).toBeUndefined();
      // A requester sees only what its principal asked for; a status filter narrows it.
      expect((await list(writer, `since=${encodeURIComponent(since)}`)).body.items.map((j) => j.jobId)).toEqual(jobs.slice(0, 2));
      expect((await list(other, `since=${encodeURIComponent(since)}&status=verified`)).body.items.map((j) => j.jobId)).toEqual(jobs.slice(2));
      expect((await list(other, `since=${encodeURIComponent(since)}&status=failed`)).body.items).toEqual([]);
      // Bad parameters change nothing and say what is wrong.
      for (const query of ['status=done', 'since=yesterday', 'limit=0', 'limit=101', 'cursor=bm90LWEtY3Vyc29y', 'sneaky=1', 'status=verified&status=failed']) {
        const bad = await list(admin, query);
        expect([query, bad.status, bad.body.code]).toEqual([query, 422, 'MEM_VALIDATION']);
      }
      const plain = await rt.issue({ agentId: 'plain-reader', actions: ['search'] });
      expect((await list(plain, '')).status).toBe(403);
    });

    it('lists deletion jobs newest first on request, and by subject within what the caller may see', async () => {
      await rt.advance(5);
      const since = new Date(rt.now()).toISOString();
      const other = await rt.issue({ agentId: 'other-bot', principal: { id: 'dora', kind: 'person' } });
      const jobs: string[] = [];
      for (const [i, [token, subjectId]] of ([[writer, 'cust-ord-a'], [other, 'cust-ord-b'], [writer, 'cust-ord-b']] as const).entries()) {
        const id = `rc-ord-${i}`;
        expect((await rt.api('POST', '/v1/memories', { token, body: memory({ id, subjectId, content: `Ordered record ${i} about Pangolin` }) })).status).toBe(201);
        const del = await rt.api('DELETE', `/v1/memories/${id}`, { token });
        jobs.push(String(del.body.jobId));
        await finished(String(del.body.jobId));
        await rt.advance(2);
      }
      const [a, b, c] = jobs;
      type Page = { items: Array<{ jobId: string; subjectId: string }>; nextCursor?: string; code?: string; detail?: string };
      const list = (token: string, query: string) => rt.api<Page>('GET', `/v1/deletion-jobs?since=${encodeURIComponent(since)}&${query}`, { token });
      const ids = (page: { body: Page }) => page.body.items.map((j) => j.jobId);

      // Newest first, page by page; without the parameter the order is still oldest first.
      const first = await list(admin, 'order=newest&limit=2');
      expect(ids(first)).toEqual([c, b]);
      const second = await list(admin, `order=newest&limit=2&cursor=${first.body.nextCursor}`);
      expect(ids(second)).toEqual([a]);
      expect(second.body.nextCursor).toBeUndefined();
      expect(ids(await list(admin, ''))).toEqual([a, b, c]);
      expect(ids(await list(admin, 'order=oldest'))).toEqual([a, b, c]);
      // A cursor continues its own order only.
      const oldestPage = await list(admin, 'limit=1');
      for (const query of [`order=oldest&cursor=${first.body.nextCursor}`, `order=newest&cursor=${oldestPage.body.nextCursor}`]) {
        const mixed = await list(admin, query);
        expect([query, mixed.status, mixed.body.code]).toEqual([query, 422, 'MEM_VALIDATION']);
      }
      // It is sealed: it names no job it passed over, and another principal cannot continue it.
      expect(Buffer.from(String(first.body.nextCursor).slice(3), 'base64url').toString('latin1')).not.toContain(String(b));
      const borrowed = await list(writer, `order=newest&limit=2&cursor=${first.body.nextCursor}`);
      expect([borrowed.status, borrowed.body.code, borrowed.body.detail]).toEqual([422, 'MEM_VALIDATION', 'cursor: not a cursor of this listing']);

      // One subject's jobs: all of them for the administrator, only the caller's own for a requester.
      expect(ids(await list(admin, 'order=newest&subjectId=cust-ord-b'))).toEqual([c, b]);
      expect(ids(await list(writer, 'subjectId=cust-ord-b'))).toEqual([c]);
      expect(ids(await list(other, 'subjectId=cust-ord-b'))).toEqual([b]);
      // A subject whose only jobs someone else requested answers exactly as one without any job.
      const othersOnly = await list(other, 'subjectId=cust-ord-a');
      const unknown = await list(other, 'subjectId=cust-ord-never');
      expect([othersOnly.status, othersOnly.body]).toEqual([200, { items: [] }]);
      expect([unknown.status, unknown.body]).toEqual([othersOnly.status, othersOnly.body]);

      for (const query of ['order=latest', 'order=newest&order=oldest', 'subjectId=..', 'subjectId=a%20b', 'subjectId=', 'subjectId=x&subjectId=y', `subjectId=${'s'.repeat(300)}`]) {
        const bad = await list(admin, query);
        expect([query, bad.status, bad.body.code]).toEqual([query, 422, 'MEM_VALIDATION']);
      }
    });

    it('rotates the receipt key: new receipts carry the new kid, and receipts signed before keep verifying against the published keys', async () => {
      const deleteAndReceipt = async (id: string) => {
        await write(id, 'cust-rotate', `Rotation record ${id} about the Quokka account`);
        const del = await rt.api('DELETE', `/v1/memories/${id}`, { token: writer });
        expect(del.status).toBe(202);
        return receiptOf(String(del.body.jobId));
      };
      const before = await deleteAndReceipt('rc-rot-1');
      const oldKid = (await verifyReceipt(before.receipt, keys)).kid;

      const rotated = await memctl('receipt-key', 'rotate', '--file', rt.receiptKeyFile());
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toContain(`still published (old receipts verify): kid ${oldKid}`);
      const newKid = /signs from the next start: {2}kid (\S+)/.exec(rotated.stdout)?.[1];
      expect(newKid).toBeDefined();
      expect(newKid).not.toBe(oldKid);
      // The private half never leaves the key file; the file stays the owner's alone.
      expect(statSync(rt.receiptKeyFile()).mode & 0o777).toBe(0o600);
      await rt.restart();

      const after = await deleteAndReceipt('rc-rot-2');
      const published = (await rt.api<{ keys: ReceiptPublicKey[] }>('GET', '/v1/receipt-keys')).body.keys;
      expect(published.map((k) => k.kid).sort()).toEqual([oldKid, newKid].sort());
      expect((await verifyReceipt(after.receipt, published)).kid).toBe(newKid);
      // The receipt signed before the rotation: still valid, by the old key, online and offline.
      expect((await verifyReceipt(before.receipt, published)).kid).toBe(oldKid);
      await expect(verifyReceipt(before.receipt, published.filter((k) => k.kid === newKid))).rejects.toMatchObject({ code: 'RECEIPT_INVALID' });
      const file = path.join(tmp, 'before-rotation.jws');
      writeFileSync(file, `${before.receipt}\n`);
      const offline = await memctl('receipt', 'verify', file, '--key', `${rt.url}/v1/receipt-keys`);
      expect(offline.code, offline.stderr).toBe(0);
      expect(offline.stdout).toContain(`kid ${oldKid}`);
      keys = published;
    }, STARTUP_MS);
  });
