/**
 * The deletion job's rules (§8.1, §8.2), given/when/then: given the facts a job was folded from,
 * when something happens to it, then these facts and this work. Time and legal holds are inputs.
 */
import { describe, expect, it } from 'vitest';
import type { DeletionEvidence, DeletionJob, DeletionTarget } from '@gm/contracts';
import { deciderSpec } from '@gm/testing/decider-spec';
import { decideDeletion, pendingWork, receiptAskDue, retainsPrimary, targetsToRedo } from './decide.ts';
import { evolveDeletion, foldDeletion } from './evolve.ts';
import type { DeletionDecision, DeletionFact, DeletionInput, DeletionRequest, DeletionSettings, HoldNow } from './job.ts';

const T0 = '2025-03-01T09:00:00.000Z';
const at = (ms: number): string => new Date(Date.parse(T0) + ms).toISOString();
const SETTINGS: DeletionSettings = {
  targets: ['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet', 'key'],
  deadlineMs: 60_000, verifyRetryMs: 500, resendAfterMs: 2_000,
};
const FAN_OUT: DeletionTarget[] = ['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet'];
const HOLD: HoldNow = { holdId: 'hold-1', reason: 'litigation' };

const spec = deciderSpec<DeletionInput, DeletionFact, DeletionJob | undefined, DeletionDecision>({
  decide: (input, job) => decideDeletion(input, job, SETTINGS),
  evolve: evolveDeletion,
  initialState: () => undefined,
});

const request = (overrides: Partial<DeletionRequest> = {}): DeletionRequest => ({
  jobId: 'job-1', tenant: 'tenant-acme', subjectId: 'subject-ada', recordIds: ['mem-1', 'mem-2'], mode: 'delete',
  alreadyTombstoned: [], requestedBy: { agentId: 'agent-c', principalId: 'person-carl' }, requestedAt: T0, policyRevision: 3,
  ...overrides,
});
const requested = (overrides: Partial<DeletionRequest> = {}, hold: HoldNow = null, now = T0): DeletionInput =>
  ({ type: 'RequestDeletion', now, request: request(overrides), hold });
const tombstoned = (recordId: string, now: string, hold: HoldNow = null): DeletionInput => ({ type: 'RecordTombstoned', now, recordId, hold });
const evidence = (target: string, now: string, status: 'done' | 'failed' = 'done', ref = 'removed=2;remaining=0'): DeletionEvidence =>
  ({ target, status, completedAt: now, verifier: 'worker', ref });
const acked = (target: DeletionTarget, now: string, hold: HoldNow = null, status: 'done' | 'failed' = 'done'): DeletionInput =>
  ({ type: 'TargetAcknowledged', now, target, evidence: evidence(target, now, status), hold });
const verification = (now: string, findings: string[] = [], hold: HoldNow = null): DeletionInput => ({
  type: 'VerificationReported', now, evidence: evidence('verification', now, findings.length ? 'failed' : 'done'),
  findings, residual: [], hold,
});
const timePassed = (now: string): DeletionInput => ({ type: 'TimePassed', now });

/** The facts of running `inputs` through the decider from nothing, as a spec's `given`. */
function history(inputs: DeletionInput[]): DeletionFact[] {
  const facts: DeletionFact[] = [];
  let job: DeletionJob | undefined;
  for (const input of inputs) {
    const decision = decideDeletion(input, job, SETTINGS);
    facts.push(...decision.facts);
    job = foldDeletion(decision.facts, job);
  }
  return facts;
}
const jobAfter = (inputs: DeletionInput[]): DeletionJob => {
  const job = foldDeletion(history(inputs));
  if (job === undefined) throw new Error('no job');
  return job;
};

const opened = [requested()];
const allTombstoned = [...opened, tombstoned('mem-1', at(10)), tombstoned('mem-2', at(20))];
const allAcked = [...allTombstoned, ...FAN_OUT.map((t, i) => acked(t, at(100 + i)))];
const cleanReplay = [...allAcked, verification(at(300))];

describe('a request opens a job (§8.1): tombstone first', () => {
  it('a delete takes every target the deployment keeps, keys included, and tombstones each record', () => {
    spec.given([]).when(requested()).then(({ facts, work }) => {
      expect(facts).toEqual([{ type: 'JobOpened', job: expect.objectContaining({
        jobId: 'job-1', status: 'invalidating', targets: SETTINGS.targets, deadline: at(60_000), updatedAt: T0,
        progress: { tombstoned: [], verificationAttempts: 0 }, evidence: [],
      }) }]);
      expect(work).toEqual([{ type: 'TombstoneMemory', recordId: 'mem-1' }, { type: 'TombstoneMemory', recordId: 'mem-2' }]);
    });
  });

  it('a revocation keeps the content for audit: no key target, and it never purges', () => {
    const job = jobAfter([requested({ mode: 'revoke', recordIds: ['mem-1'] })]);
    expect(job.targets).not.toContain('key');
    expect(retainsPrimary(job)).toBe(true);
    spec.given(history([requested({ mode: 'revoke', recordIds: ['mem-1'] }), tombstoned('mem-1', at(1)), ...FAN_OUT.slice(0, -1).map((t) => acked(t, at(2)))]))
      .when(acked('evidence_packet', at(3))).then(({ work }) => expect(work).toEqual([{ type: 'Task', target: 'verification' }]));
  });

  it('records an earlier revocation tombstoned go straight to the fan-out', () => {
    spec.given([]).when(requested({ recordIds: ['mem-1'], alreadyTombstoned: ['mem-1'] })).then(({ work }) => {
      expect(work).toEqual(FAN_OUT.map((target) => ({ type: 'Task', target })));
    });
  });

  it('a forget of a subject without records still opens a job and goes straight to the replays (no existence oracle)', () => {
    spec.given([]).when(requested({ mode: 'forget', recordIds: [] })).then(({ facts, work }) => {
      expect(foldDeletion(facts)?.status).toBe('verifying');
      expect(work).toEqual([{ type: 'Task', target: 'verification' }]);
    });
  });

  it('a redelivered request changes nothing and sends again what the job still waits for', () => {
    spec.given(history([...opened, tombstoned('mem-1', at(10))])).when(requested()).then(({ facts, work }) => {
      expect(facts).toEqual([]);
      expect(work).toEqual([{ type: 'TombstoneMemory', recordId: 'mem-2' }]);
    });
  });
});

describe('tombstones → fan-out → purge and verification (§8.2)', () => {
  it('fans out to every target but the keys once the last record is tombstoned, not before', () => {
    spec.given(history(opened)).when(tombstoned('mem-1', at(10))).then(({ facts, work }) => {
      expect(facts).toEqual([{ type: 'RecordTombstoned', recordId: 'mem-1', at: at(10) }]);
      expect(work).toEqual([]);
    });
    spec.given(history([...opened, tombstoned('mem-1', at(10))])).when(tombstoned('mem-2', at(20))).then(({ work }) => {
      expect(work).toEqual(FAN_OUT.map((target) => ({ type: 'Task', target })));
    });
  });

  it('ignores a tombstone seen twice', () => {
    spec.given(history([...opened, tombstoned('mem-1', at(10))])).when(tombstoned('mem-1', at(11))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
  });

  it('records each ack as evidence; the last one purges every record and asks for the replays', () => {
    spec.given(history(allTombstoned)).when(acked('primary', at(100))).then(({ facts, work }) => {
      expect(facts).toEqual([{ type: 'TargetDone', evidence: evidence('primary', at(100)), at: at(100) }]);
      expect(work).toEqual([]);
    });
    spec.given(history(allAcked.slice(0, -1))).when(acked('evidence_packet', at(200))).then(({ facts, work }) => {
      expect(foldDeletion(facts, jobAfter(allAcked.slice(0, -1)))).toMatchObject({ status: 'verifying', evidence: expect.arrayContaining([evidence('evidence_packet', at(200))]) });
      expect(work).toEqual([
        { type: 'PurgeMemory', recordId: 'mem-1' }, { type: 'PurgeMemory', recordId: 'mem-2' }, { type: 'Task', target: 'verification' },
      ]);
    });
  });

  it('a repeated ack replaces its target\'s evidence instead of adding a second', () => {
    const job = jobAfter([...allTombstoned, acked('primary', at(100)), acked('primary', at(101))]);
    expect(job.evidence).toEqual([evidence('primary', at(101))]);
  });

  it('ignores a key ack that comes before the replays asked for one', () => {
    spec.given(history(allTombstoned)).when(acked('key', at(100))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
  });
});

describe('verification replays and keys (§8.2, §8.3, §8.5)', () => {
  it('clean replays send the key task; its ack verifies the job and asks for the receipt', () => {
    spec.given(history(allAcked)).when(verification(at(300))).then(({ facts, work }) => {
      expect(facts.map((f) => f.type)).toEqual(['VerificationPassed', 'ShreddingStarted']);
      expect(work).toEqual([{ type: 'Task', target: 'key' }]);
    });
    spec.given(history(cleanReplay)).when(acked('key', at(400))).then(({ facts, work }) => {
      expect(facts.map((f) => f.type)).toEqual(['TargetDone', 'JobVerified']);
      expect(foldDeletion(facts, jobAfter(cleanReplay))).toMatchObject({ status: 'verified', progress: { verificationAttempts: 1, findings: [] } });
      expect(work).toEqual([{ type: 'Task', target: 'receipt' }]);
    });
  });

  it('without a key target (vectors and keys not kept) clean replays verify at once', () => {
    const settings = { ...SETTINGS, targets: FAN_OUT.filter((t) => t !== 'vector') };
    let job: DeletionJob | undefined;
    const run = (input: DeletionInput): DeletionDecision => {
      const d = decideDeletion(input, job, settings);
      job = foldDeletion(d.facts, job);
      return d;
    };
    run(requested({ alreadyTombstoned: ['mem-1', 'mem-2'] }));
    for (const t of settings.targets) run(acked(t, at(100)));
    expect(run(verification(at(300))).work).toEqual([{ type: 'Task', target: 'receipt' }]);
    expect(job?.status).toBe('verified');
  });

  it('replays that still find a copy wait verifyRetryMs, then ask again', () => {
    spec.given(history(allAcked)).when(verification(at(300), ['keyword:mem-1'])).then(({ facts, work }) => {
      expect(facts).toEqual([expect.objectContaining({ type: 'VerificationFound', findings: ['keyword:mem-1'], retryAt: at(800) })]);
      expect(work).toEqual([]);
    });
    const found = history([...allAcked, verification(at(300), ['keyword:mem-1'])]);
    spec.given(found).when(timePassed(at(799))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
    spec.given(found).when(timePassed(at(800))).then(({ facts, work }) => {
      expect(facts).toEqual([{ type: 'VerificationRetried', at: at(800) }]);
      expect(foldDeletion(facts, jobAfter([...allAcked, verification(at(300), ['keyword:mem-1'])]))?.progress.nextVerificationAt).toBeUndefined();
      expect(work).toEqual([{ type: 'Task', target: 'verification' }]);
    });
  });
});

describe('a retry removes again what the replays still found (§8.3)', () => {
  it('sends the summary task again before replaying when a summary still held the content', () => {
    const found = [...allAcked, verification(at(300), ['summary-search:ghost-copy', 'index:ghost-copy', 'search:mem-1'])];
    spec.given(history(found)).when(timePassed(at(800))).then(({ work }) => {
      expect(work).toEqual([{ type: 'Task', target: 'summary' }, { type: 'Task', target: 'verification' }]);
    });
  });

  it('leaves copies only their target removes to that target: a survivor stays a finding', () => {
    const found = [...allAcked, verification(at(300), ['index:mem-1', 'vector:mem-1', 'primary:mem-1', 'retrieval-cache:ab', 'evidence-packet:p'])];
    spec.given(history(found)).when(timePassed(at(800))).then(({ work }) => expect(work).toEqual([{ type: 'Task', target: 'verification' }]));
  });

  it('names the summary once, and only when the job has that target', () => {
    const job = jobAfter([...allAcked, verification(at(300), ['summary:mem-1', 'summary-search:x'])]);
    expect(targetsToRedo(job)).toEqual(['summary']);
    expect(targetsToRedo({ ...job, targets: job.targets.filter((t) => t !== 'summary') })).toEqual([]);
  });

  it('a redone target\'s ack while verifying changes only its evidence', () => {
    const found = [...allAcked, verification(at(300), ['summary-search:x']), timePassed(at(800))];
    spec.given(history(found)).when(acked('summary', at(900))).then(({ facts, work }) => {
      expect(facts.map((f) => f.type)).toEqual(['TargetDone']);
      expect(work).toEqual([]);
    });
  });
});

describe('legal holds, in every order (§8.1, §8.4)', () => {
  const heldJob = (inputs: DeletionInput[]): DeletionJob => jobAfter(inputs);

  it('a hold when the job opens: tombstones and derived copies go, the content stays (no purge, no key)', () => {
    const job = heldJob([requested({}, HOLD)]);
    expect(job).toMatchObject({ legalHold: { holdId: 'hold-1', reason: 'litigation' } });
    expect(job.targets).not.toContain('key');
    const acksIn = [requested({}, HOLD), tombstoned('mem-1', at(10)), tombstoned('mem-2', at(20)), ...FAN_OUT.slice(0, -1).map((t) => acked(t, at(100)))];
    spec.given(history(acksIn)).when(acked('evidence_packet', at(200))).then(({ work }) => expect(work).toEqual([{ type: 'Task', target: 'verification' }]));
    spec.given(history([...acksIn, acked('evidence_packet', at(200))])).when(verification(at(300))).then(({ facts, work }) => {
      expect(facts.map((f) => f.type)).toEqual(['VerificationPassed', 'JobVerified']);
      expect(work).toEqual([{ type: 'Task', target: 'receipt' }]);
    });
  });

  it('a hold placed before the last tombstone: the fan-out keeps the content', () => {
    spec.given(history([...opened, tombstoned('mem-1', at(10))])).when(tombstoned('mem-2', at(20), HOLD)).then(({ facts }) => {
      expect(facts).toContainEqual({ type: 'HoldSeen', hold: { holdId: 'hold-1', reason: 'litigation' } });
      const job = foldDeletion(facts, jobAfter([...opened, tombstoned('mem-1', at(10))]));
      expect(job && retainsPrimary(job)).toBe(true);
      expect(job?.targets).not.toContain('key');
    });
  });

  it('a hold placed before the last ack: no purge', () => {
    spec.given(history(allAcked.slice(0, -1))).when(acked('evidence_packet', at(200), HOLD)).then(({ facts, work }) => {
      expect(facts.map((f) => f.type)).toEqual(['TargetDone', 'HoldSeen', 'VerificationStarted']);
      expect(work).toEqual([{ type: 'Task', target: 'verification' }]);
    });
  });

  it('a hold placed before the keys go: they stay, and the job verifies without destroying them', () => {
    spec.given(history(allAcked)).when(verification(at(300), [], HOLD)).then(({ facts, work }) => {
      expect(facts.map((f) => f.type)).toEqual(['VerificationPassed', 'HoldSeen', 'JobVerified']);
      expect(work).toEqual([{ type: 'Task', target: 'receipt' }]);
    });
  });

  it('a job that keeps its content already notes no second hold', () => {
    spec.given(history([requested({}, HOLD), tombstoned('mem-1', at(1))])).when(tombstoned('mem-2', at(2), { holdId: 'hold-2' })).then(({ facts }) => {
      expect(facts.map((f) => f.type)).toEqual(['RecordTombstoned']);
    });
  });

  describe('the hold is released: a job continues the one that kept the content', () => {
    const held = heldJob([requested({}, HOLD), tombstoned('mem-1', at(1)), tombstoned('mem-2', at(2))]);
    const release = (hold: HoldNow = null): DeletionInput => ({
      type: 'ContinueAfterRelease', now: at(10_000), jobId: 'job-2', held, holdId: 'hold-1',
      requestedBy: { agentId: 'agent-a', principalId: 'person-admin' }, requestedAt: at(9_999), hold,
    });

    it('starts at the fan-out with every target, keys included, its deadline counted from now', () => {
      spec.given([]).when(release()).then(({ facts, work }) => {
        expect(foldDeletion(facts)).toMatchObject({
          jobId: 'job-2', continues: { jobId: 'job-1', holdId: 'hold-1' }, targets: SETTINGS.targets, deadline: at(70_000),
          progress: { tombstoned: ['mem-1', 'mem-2'] }, requestedAt: at(9_999),
        });
        expect(work).toEqual(FAN_OUT.map((target) => ({ type: 'Task', target })));
      });
    });

    it('keeps the content for another hold of the subject that still applies', () => {
      spec.given([]).when(release({ holdId: 'hold-2' })).then(({ facts }) => {
        expect(foldDeletion(facts)).toMatchObject({ legalHold: { holdId: 'hold-2' } });
        expect(foldDeletion(facts)?.targets).not.toContain('key');
      });
    });

    it('a redelivered release opens nothing new; the kept job is marked continued once', () => {
      spec.given(history([release()])).when(release()).then(({ facts }) => expect(facts).toEqual([]));
      spec.given([{ type: 'JobOpened', job: held }]).when({ type: 'MarkContinued', by: 'job-2' }).then(({ facts }) => {
        expect(facts).toEqual([{ type: 'JobContinued', by: 'job-2' }]);
      });
      spec.given([{ type: 'JobOpened', job: held }, { type: 'JobContinued', by: 'job-2' }]).when({ type: 'MarkContinued', by: 'job-3' })
        .then(({ facts }) => expect(facts).toEqual([]));
    });
  });
});

describe('failures: never a silent success (§8.2)', () => {
  it('a target that acks failed fails the job: an alert on the dead-letter topic, and a receipt all the same', () => {
    spec.given(history(allTombstoned)).when(acked('keyword', at(100), null, 'failed')).then(({ facts, work }) => {
      expect(facts).toEqual([{ type: 'JobFailed', reason: 'target keyword failed: removed=2;remaining=0', cause: 'target_failed', while: 'invalidating', at: at(100) }]);
      expect(work).toEqual([{ type: 'DeadLetter', reason: 'target keyword failed: removed=2;remaining=0', while: 'invalidating' }, { type: 'Task', target: 'receipt' }]);
    });
  });

  it('a job past its deadline fails, naming its status and what the replays still found', () => {
    const found = [...allAcked, verification(at(300), ['keyword:mem-1'])];
    spec.given(history(found)).when(timePassed(at(60_001))).then(({ facts }) => {
      expect(facts).toEqual([expect.objectContaining({ type: 'JobFailed', cause: 'deadline', reason: 'deadline passed while verifying (keyword:mem-1)' })]);
      expect(foldDeletion(facts, jobAfter(found))).toMatchObject({ status: 'failed', failureReason: 'deadline passed while verifying (keyword:mem-1)' });
    });
  });

  it('a finished job ignores late acks, replays and time', () => {
    const done = history([...cleanReplay, acked('key', at(400))]);
    for (const input of [acked('primary', at(500)), verification(at(500), ['x']), timePassed(at(120_000)), tombstoned('mem-1', at(500))]) {
      spec.given(done).when(input).then((d) => expect(d).toEqual({ facts: [], work: [] }));
    }
  });

  it('ignores what happens to a job that does not exist', () => {
    spec.given([]).when(acked('primary', T0)).then((d) => expect(d).toEqual({ facts: [], work: [] }));
  });
});

describe('stalled jobs and receipts (§8.1: a restarted orchestrator resumes)', () => {
  it('a job without progress for resendAfterMs sends again what it waits for, not earlier', () => {
    const partly = history([...opened, tombstoned('mem-1', at(10))]);
    spec.given(partly).when(timePassed(at(2_009))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
    spec.given(partly).when(timePassed(at(2_010))).then(({ facts, work }) => {
      expect(facts).toEqual([{ type: 'JobResumed', at: at(2_010) }]);
      expect(work).toEqual([{ type: 'TombstoneMemory', recordId: 'mem-2' }]);
    });
  });

  it('a job that stays stalled is resumed at doubling intervals, and they start over once it progresses', () => {
    const stalled = [...opened, tombstoned('mem-1', at(10))];
    const resumedOnce = [...stalled, timePassed(at(2_010))];
    spec.given(history(resumedOnce)).when(timePassed(at(6_009))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
    spec.given(history(resumedOnce)).when(timePassed(at(6_010))).then(({ facts }) => expect(facts).toEqual([{ type: 'JobResumed', at: at(6_010) }]));
    const resumedTwice = [...resumedOnce, timePassed(at(6_010))];
    expect(jobAfter(resumedTwice).progress.resumes).toBe(2);
    spec.given(history(resumedTwice)).when(timePassed(at(14_009))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
    const progressed = [...resumedTwice, tombstoned('mem-2', at(7_000))];
    expect(jobAfter(progressed).progress.resumes).toBeUndefined();
    // resendAfterMs again, not the 8 s the third resend would have waited.
    spec.given(history(progressed)).when(timePassed(at(8_999))).then((d) => expect(d).toEqual({ facts: [], work: [] }));
    spec.given(history(progressed)).when(timePassed(at(9_000))).then(({ facts }) => expect(facts).toEqual([{ type: 'JobResumed', at: at(9_000) }]));
  });

  it('what a job waits for, by its state', () => {
    expect(pendingWork(jobAfter([...allTombstoned, acked('primary', at(100))]))).toEqual(FAN_OUT.slice(1).map((target) => ({ type: 'Task', target })));
    expect(pendingWork(jobAfter(allAcked))).toEqual([
      { type: 'PurgeMemory', recordId: 'mem-1' }, { type: 'PurgeMemory', recordId: 'mem-2' }, { type: 'Task', target: 'verification' },
    ]);
    expect(pendingWork(jobAfter(cleanReplay))).toEqual([{ type: 'Task', target: 'key' }]);
    expect(pendingWork(jobAfter([...allAcked, verification(at(300), ['x'])]))).toEqual([]);
  });

  it('a finished job\'s missing receipt is asked again at most once per resendAfterMs', () => {
    const done = jobAfter([...cleanReplay, acked('key', at(400))]);
    expect(receiptAskDue(done, undefined, Date.parse(at(2_399)), 2_000)).toBe(false);
    expect(receiptAskDue(done, undefined, Date.parse(at(2_400)), 2_000)).toBe(true);
    expect(receiptAskDue(done, Date.parse(at(3_000)), Date.parse(at(4_000)), 2_000)).toBe(false);
    expect(receiptAskDue(jobAfter(allAcked), undefined, Date.parse(at(99_000)), 2_000)).toBe(false);
  });
});
