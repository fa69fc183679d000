import type { DeletionReceipt } from '@gm/contracts';

/** A verified delete's receipt, for the receipt specs (only `receiptId` and `jobId` vary). */
export const sampleReceipt = (receiptId = 'rcpt_1', jobId = 'job-1'): DeletionReceipt => ({
  receiptId, jobId, tenant: 'acme', mode: 'delete', subjectId: 'cust-1', recordIds: ['m-1'],
  contentCommitments: [{ recordId: 'm-1', commitment: 'a'.repeat(64) }],
  requestedBy: { agentId: 'bot', principalId: 'alice' }, requestedAt: '2026-11-30T08:00:00.000Z', completedAt: '2026-11-30T08:00:01.000Z',
  policyRevision: 3, targets: [{ target: 'primary', status: 'done', completedAt: '2026-11-30T08:00:01.000Z', ref: 'removed=1;remaining=0' }],
  replay: { probes: 6, ref: 'probes=6;findings=0', attempts: 1, findings: [] }, status: 'verified', retention: 'purged',
  eventLog: { holdsContent: true, note: 'memory.events still holds the content' },
  issuedAt: '2026-11-30T08:00:02.000Z', issuer: 'test',
});
