import { describe, expect, it } from 'vitest';
import type { ContentCommitment, DeletionJob } from '@gm/contracts';
import { REVOKED_RETENTION_REASON, buildReceipt, receiptIdOf } from './receipts.ts';

const job = (over: Partial<DeletionJob> = {}): DeletionJob => ({
  jobId: 'job-1', tenant: 'acme', subjectId: 'cust-1', recordIds: ['m-1', 'm-2'], mode: 'delete',
  requestedBy: { agentId: 'bot', principalId: 'alice' }, requestedAt: '2026-11-30T08:00:00.000Z', policyRevision: 2,
  targets: ['primary', 'keyword'], status: 'verified', deadline: '2026-11-30T08:01:00.000Z',
  evidence: [
    { target: 'primary', status: 'done', completedAt: '2026-11-30T08:00:01.000Z', verifier: 'projector', ref: 'removed=2;remaining=0' },
    { target: 'keyword', status: 'done', completedAt: '2026-11-30T08:00:01.000Z', verifier: 'index-builder', ref: 'removed=2' },
    { target: 'verification', status: 'done', completedAt: '2026-11-30T08:00:02.000Z', verifier: 'receipt-verifier', ref: 'probes=10;findings=0' },
  ],
  updatedAt: '2026-11-30T08:00:02.000Z', progress: { tombstoned: ['m-1', 'm-2'], verificationAttempts: 1, findings: [] },
  ...over,
});
const records: ContentCommitment[] = [{ recordId: 'm-1', commitment: 'b'.repeat(64) }, { recordId: 'm-2', commitment: null }];
const now = new Date('2026-11-30T08:00:03.000Z');

describe('buildReceipt: what a finished job may claim', () => {
  it('a verified delete whose keys were destroyed is purged; it carries the commitments, no content hash; the event log holds no content', () => {
    const keyEvidence = {
      target: 'key', status: 'done' as const, completedAt: '2026-11-30T08:00:02.500Z', verifier: 'receipt-verifier',
      ref: 'data_keys=2;keks=0;keks_kept=0;events=2;undecryptable=2;key_residue=none;wal_checkpoints=2',
    };
    const r = buildReceipt(job({ targets: ['primary', 'keyword', 'key'], evidence: [...job().evidence, keyEvidence] }), records, now);
    expect(r).toMatchObject({
      receiptId: receiptIdOf('acme', 'job-1'), status: 'verified', retention: 'purged', completedAt: '2026-11-30T08:00:02.000Z',
      contentCommitments: [{ recordId: 'm-1', commitment: 'b'.repeat(64) }, { recordId: 'm-2', commitment: null }],
      replay: { probes: 10, ref: 'probes=10;findings=0', attempts: 1, findings: [] }, eventLog: { holdsContent: false },
    });
    expect(r.targets.map((t) => `${t.target}:${t.status}`)).toEqual(['primary:done', 'keyword:done', 'key:done']);
    expect(r.retentionReason).toBeUndefined();
    expect(r.contentHashes).toBeUndefined();
  });

  it('never says purged while a key that opens the event log exists', () => {
    const r = buildReceipt(job(), records, now);
    expect(r).toMatchObject({
      status: 'verified', retention: 'access_revoked_retained', eventLog: { holdsContent: true },
      retentionReason: 'the event log still holds the content: no key was destroyed',
    });
  });

  it('a revocation, a legal hold and a failed job are access_revoked_retained, with the reason', () => {
    expect(buildReceipt(job({ mode: 'revoke' }), records, now)).toMatchObject({ retention: 'access_revoked_retained', retentionReason: REVOKED_RETENTION_REASON });
    expect(buildReceipt(job({ mode: 'forget', legalHold: { holdId: 'h-1', reason: 'litigation' } }), records, now))
      .toEqual(expect.objectContaining({ retention: 'access_revoked_retained', retentionReason: 'legal hold h-1', legalHold: { holdId: 'h-1' } }));
    // The hold's reason is for those who may read holds: never in a receipt.
    expect(JSON.stringify(buildReceipt(job({ mode: 'forget', legalHold: { holdId: 'h-1', reason: 'litigation' } }), records, now))).not.toContain('litigation');
    const failed = buildReceipt(
      job({ status: 'failed', failureReason: 'deadline passed while invalidating', evidence: [], progress: { tombstoned: [], verificationAttempts: 0 } }),
      records, now,
    );
    expect(failed).toMatchObject({ status: 'failed', retention: 'access_revoked_retained', failureReason: 'deadline passed while invalidating', replay: { probes: null } });
    expect(failed.targets).toEqual([
      { target: 'primary', status: 'missing', completedAt: null, ref: '' }, { target: 'keyword', status: 'missing', completedAt: null, ref: '' },
    ]);
  });

  it('refuses a job that is not finished', () => {
    expect(() => buildReceipt(job({ status: 'verifying' }), records, now)).toThrow(/not finished/);
  });
});
