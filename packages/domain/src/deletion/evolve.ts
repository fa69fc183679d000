import type { DeletionEvidence, DeletionJob } from '@gm/contracts';
import type { DeletionFact } from './job.ts';

const withEvidence = (job: DeletionJob, evidence: DeletionEvidence): DeletionEvidence[] =>
  [...job.evidence.filter((e) => e.target !== evidence.target), evidence];

/** The job after one fact: the only place a stored job changes (§8.1). */
export function evolveDeletion(job: DeletionJob | undefined, fact: DeletionFact): DeletionJob | undefined {
  const next = evolveOnce(job, fact);
  // Progress (any other fact that moves the job on) starts the resend intervals over.
  if (next === undefined || fact.type === 'JobResumed' || next.updatedAt === job?.updatedAt || next.progress.resumes === undefined) return next;
  const { resumes: _progressMade, ...progress } = next.progress;
  return { ...next, progress };
}

function evolveOnce(job: DeletionJob | undefined, fact: DeletionFact): DeletionJob | undefined {
  if (fact.type === 'JobOpened') return fact.job;
  if (job === undefined) return undefined;
  switch (fact.type) {
    case 'RecordTombstoned':
      return { ...job, progress: { ...job.progress, tombstoned: [...job.progress.tombstoned, fact.recordId] }, updatedAt: fact.at };
    case 'HoldSeen':
      return { ...job, legalHold: fact.hold, targets: job.targets.filter((t) => t !== 'key') };
    case 'TargetDone':
      return { ...job, evidence: withEvidence(job, fact.evidence), updatedAt: fact.at };
    case 'VerificationStarted':
      return { ...job, status: 'verifying', updatedAt: fact.at };
    case 'VerificationFound':
      return {
        ...job, evidence: withEvidence(job, fact.evidence), updatedAt: fact.at,
        progress: {
          ...job.progress, verificationAttempts: job.progress.verificationAttempts + 1,
          findings: fact.findings, residual: fact.residual, nextVerificationAt: fact.retryAt,
        },
      };
    case 'VerificationPassed':
      return {
        ...job, evidence: withEvidence(job, fact.evidence), updatedAt: fact.at,
        progress: { ...job.progress, verificationAttempts: job.progress.verificationAttempts + 1, findings: [], residual: fact.residual },
      };
    case 'ShreddingStarted':
      return { ...job, progress: { ...job.progress, shredding: true } };
    case 'VerificationRetried': {
      const { nextVerificationAt: _sent, ...progress } = job.progress;
      return { ...job, progress, updatedAt: fact.at };
    }
    case 'JobResumed':
      return { ...job, updatedAt: fact.at, progress: { ...job.progress, resumes: (job.progress.resumes ?? 0) + 1 } };
    case 'JobVerified':
      return { ...job, status: 'verified', updatedAt: fact.at };
    case 'JobFailed':
      return { ...job, status: 'failed', failureReason: fact.reason, updatedAt: fact.at };
    case 'JobContinued':
      return { ...job, continuedBy: fact.by };
  }
}

export const foldDeletion = (facts: readonly DeletionFact[], job?: DeletionJob): DeletionJob | undefined =>
  facts.reduce<DeletionJob | undefined>(evolveDeletion, job);
