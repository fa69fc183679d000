import { useEffect, useState } from 'preact/hooks';
import { api, ApiProblem, asProblem, encodeId } from '../api.ts';
import type { DeletionJob, DeletionReceipt, Problem, ReceiptResponse } from '../api-types.ts';
import { ColumnHeads } from '../components/column-heads.tsx';
import { ProblemAlert } from '../components/problem-alert.tsx';
import { Time } from '../components/time.tsx';
import { EVIDENCE_LEGEND, explainEvidence, legendKeys } from '../evidence.ts';
import { formatOffset } from '../format.ts';
import { hrefOf } from '../router.ts';
import type { Verdict } from '../receipts.ts';
import { decodedPayload, DownloadJws, PastedReceipt, PayloadView, VerdictLine, verifyAgainstPublishedKeys } from './receipt-panel.tsx';

const POLL_MS = 2_000;

type JobState = { state: 'loading' } | { state: 'loaded'; job: DeletionJob } | { state: 'refused'; problem: Problem };
type ReceiptState =
  | { state: 'loading' }
  | { state: 'none' }
  /** `receipt`: the server's reading (facts for the page); `payload`: what the JWS itself carries (shown, verified). */
  | { state: 'loaded'; jws: string; receipt: DeletionReceipt; payload: unknown; verdict: Verdict | 'checking' }
  | { state: 'refused'; problem: Problem };

const FINISHED = new Set(['verified', 'failed']);

/**
 * One deletion job: its evidence, legal hold, residuals and links, and its receipt verified
 * here. Followed every 2 s until the receipt exists (a job in progress changes; a receipt does not).
 */
export function JobDetailPage({ jobId }: { jobId: string }) {
  const [job, setJob] = useState<JobState>({ state: 'loading' });
  const [receipt, setReceipt] = useState<ReceiptState>({ state: 'loading' });

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      const keepPolling = await refresh(jobId, setJob, setReceipt, () => stopped);
      if (!stopped && keepPolling) timer = setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [jobId]);

  return (
    <section aria-labelledby="job-heading">
      <p><a href={hrefOf({ page: 'jobs' })}>← All deletion jobs</a></p>
      <h1 id="job-heading">Deletion job <code>{jobId}</code></h1>
      {job.state === 'loading' && <p aria-busy="true">Loading the job…</p>}
      {job.state === 'refused' && <ProblemAlert problem={job.problem} lead="The server did not show this job." />}
      {job.state === 'loaded' && <JobView job={job.job} receipt={receipt.state === 'loaded' ? receipt.receipt : undefined} />}
      {job.state === 'loaded' && <ReceiptView jobId={jobId} receipt={receipt} />}
      <PastedReceipt />
    </section>
  );
}

/** One round: the job, then its receipt once the job finished. Answers whether to poll again. */
async function refresh(
  jobId: string, setJob: (s: JobState) => void, setReceipt: (s: ReceiptState) => void, stopped: () => boolean,
): Promise<boolean> {
  let job: DeletionJob;
  try {
    job = await api<DeletionJob>(`/v1/deletion-jobs/${encodeId(jobId)}`);
  } catch (err) {
    if (stopped()) return false;
    setJob({ state: 'refused', problem: asProblem(err) });
    // A refusal (401/403/404) will not change by asking again; an outage may.
    return !(err instanceof ApiProblem && err.status >= 400 && err.status < 500);
  }
  if (stopped()) return false;
  setJob({ state: 'loaded', job });
  let answer: ReceiptResponse;
  try {
    answer = await api<ReceiptResponse>(`/v1/deletion-jobs/${encodeId(jobId)}/receipt`);
  } catch (err) {
    if (stopped()) return false;
    // Not signed yet (409 MEM_NOT_YET_AVAILABLE): the job is still being carried out; ask again.
    if (err instanceof ApiProblem && err.problem.code === 'MEM_NOT_YET_AVAILABLE') {
      setReceipt({ state: 'none' });
      return true;
    }
    setReceipt({ state: 'refused', problem: asProblem(err) });
    return !(err instanceof ApiProblem && err.status >= 400 && err.status < 500);
  }
  if (stopped()) return false;
  const payload = decodedPayload(answer.receipt) ?? answer.payload;
  setReceipt({ state: 'loaded', jws: answer.receipt, receipt: answer.payload, payload, verdict: 'checking' });
  const verdict = await verifyAgainstPublishedKeys(answer.receipt);
  if (stopped()) return false;
  // A valid signature over another job's receipt is not this job's receipt.
  const forJob = verdict.valid && verdict.payload.jobId !== jobId
    ? { valid: false as const, reason: `the signature verifies, but the receipt is for job ${String(verdict.payload.jobId)}` }
    : verdict;
  setReceipt({ state: 'loaded', jws: answer.receipt, receipt: answer.payload, payload, verdict: forJob });
  // Poll on while the job record may still change after its receipt (it does not once finished).
  return !FINISHED.has(job.status);
}

function JobView({ job, receipt }: { job: DeletionJob; receipt: DeletionReceipt | undefined }) {
  const residual = [...(job.progress.residual ?? []), ...(receipt?.replay.residual ?? [])]
    .filter((r, i, all) => all.findIndex((o) => o.recordId === r.recordId) === i);
  return (
    <>
      <dl class="facts">
        <div><dt>Status</dt><dd><span class={`badge status-${job.status}`} data-testid="job-status">{job.status}</span></dd></div>
        <div><dt>Mode</dt><dd>{job.mode}</dd></div>
        <div><dt>Subject</dt><dd><code>{job.subjectId}</code></dd></div>
        <div><dt>Records</dt><dd>{job.recordIds.map((id) => <code key={id} class="chip">{id}</code>)}</dd></div>
        <div><dt>Requested by</dt><dd>agent <code>{job.requestedBy.agentId}</code> for <code>{job.requestedBy.principalId}</code></dd></div>
        <div><dt>Requested</dt><dd data-testid="job-requested-at"><Time iso={job.requestedAt} /></dd></div>
        <div><dt>Deadline</dt><dd><Time iso={job.deadline} /></dd></div>
        <div><dt>Last update</dt><dd data-testid="job-updated-at"><Time iso={job.updatedAt} /></dd></div>
        {receipt !== undefined && <div><dt>Completed</dt><dd data-testid="job-completed-at"><Time iso={receipt.completedAt} /></dd></div>}
        <div><dt>Policy revision</dt><dd>{job.policyRevision}</dd></div>
        <div><dt>Verification attempts</dt><dd>{job.progress.verificationAttempts}</dd></div>
        <div><dt>Tombstoned</dt><dd>{job.progress.tombstoned.length} of {job.recordIds.length}</dd></div>
        {job.progress.shredding === true && !FINISHED.has(job.status) && <div><dt>Keys</dt><dd>being destroyed (crypto-shredding)</dd></div>}
        {job.failureReason !== undefined && <div><dt>Failure</dt><dd data-testid="job-failure">{job.failureReason}</dd></div>}
      </dl>
      {(job.progress.findings ?? []).length > 0 && (
        <>
          <h2>Findings of the last verification</h2>
          <ul>{(job.progress.findings ?? []).map((f) => <li key={f}><code>{f}</code></li>)}</ul>
        </>
      )}
      <Timeline job={job} receipt={receipt} />
      <Evidence job={job} />
      <LegalHold job={job} receipt={receipt} />
      <h2>Residuals</h2>
      {residual.length === 0 ? (
        <p data-testid="residuals">None: no other live record of the subject holds the same content.</p>
      ) : (
        <ul data-testid="residuals">
          {residual.map((r) => <li key={r.recordId}><code>{r.recordId}</code> — {r.reason.replace(/_/g, ' ')} (delete it with <code>?scope=content</code>)</li>)}
        </ul>
      )}
      {(job.continues !== undefined || job.continuedBy !== undefined) && (
        <>
          <h2>Related jobs</h2>
          <ul data-testid="job-links">
            {job.continues !== undefined && (
              <li>Continues <a href={hrefOf({ page: 'job', jobId: job.continues.jobId })} data-testid="job-continues"><code>{job.continues.jobId}</code></a>, since hold <code>{job.continues.holdId}</code> was released</li>
            )}
            {job.continuedBy !== undefined && (
              <li>Continued by <a href={hrefOf({ page: 'job', jobId: job.continuedBy })} data-testid="job-continued-by"><code>{job.continuedBy}</code></a>, which purges what this job kept</li>
            )}
          </ul>
        </>
      )}
    </>
  );
}

/**
 * The job keeps no status history: its timestamps, in order, are what it says of its course.
 * Each step shows its UTC time to the second and how long after the request it came, so steps
 * within one minute (most of a job) still read apart.
 */
function Timeline({ job, receipt }: { job: DeletionJob; receipt: DeletionReceipt | undefined }) {
  const events: Array<{ at: string; what: string }> = [{ at: job.requestedAt, what: 'requested' }];
  for (const e of job.evidence) events.push({ at: e.completedAt, what: `${e.target} target answered: ${e.status}` });
  if (job.progress.nextVerificationAt !== undefined && !FINISHED.has(job.status)) {
    events.push({ at: job.progress.nextVerificationAt, what: 'next verification (scheduled)' });
  }
  if (receipt !== undefined) {
    events.push({ at: receipt.completedAt, what: `completed: ${receipt.status}` }, { at: receipt.issuedAt, what: 'receipt signed' });
  }
  events.push({ at: job.updatedAt, what: `last update: ${job.status}` });
  // Stable: steps of the same instant keep the order the job goes through them.
  const ordered = events.map((e) => ({ ...e, ms: Date.parse(e.at) })).sort((a, b) => a.ms - b.ms);
  const start = Date.parse(job.requestedAt);
  return (
    <>
      <h2>Status over time</h2>
      <p class="muted">Times are UTC; the middle column is the time since the job was requested.</p>
      <div class="table-wrap">
        <table class="timeline" data-testid="job-timeline">
          <ColumnHeads columns={['Time (UTC)', 'Since request', 'Step']} />
          <tbody>
            {ordered.map((e, i) => (
              <tr key={i} data-testid="timeline-step">
                <td><Time iso={e.at} /></td>
                <td class="offset" data-testid="timeline-offset">{Number.isNaN(e.ms) || Number.isNaN(start) ? '—' : formatOffset(e.ms - start)}</td>
                <td>{e.what}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Evidence({ job }: { job: DeletionJob }) {
  const pending = job.targets.filter((t) => !job.evidence.some((e) => e.target === t));
  const keys = legendKeys(job.evidence);
  return (
    <>
      <h2>Evidence per target</h2>
      <p class="muted">
        Each target's worker does its step, then reads its store back: the counters in <em>Evidence</em> are what it found, and
        the sentence says the same in words. The search index and the vector index drop a record as they read its tombstone,
        and their step waits for that, so <code>removed=0;remaining=0</code> there is the usual outcome.
      </p>
      <div class="table-wrap">
        <table data-testid="job-evidence">
          <ColumnHeads columns={['Target', 'Status', 'What it means', 'Completed (UTC)', 'Verifier', 'Evidence']} />
          <tbody>
            {job.evidence.map((e, i) => (
              <tr key={`${e.target}-${i}`} data-target={e.target}>
                <th scope="row">{e.target}</th>
                <td>{e.status}</td>
                <td data-testid="evidence-sentence">{explainEvidence(e, job)}</td>
                <td><Time iso={e.completedAt} /></td>
                <td>{e.verifier}</td>
                <td><code class="break">{e.ref}</code></td>
              </tr>
            ))}
            {pending.map((t) => (
              <tr key={`pending-${t}`} data-target={t}>
                <th scope="row">{t}</th>
                <td>pending</td>
                <td data-testid="evidence-sentence">not answered yet</td>
                <td>—</td>
                <td>—</td>
                <td>—</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {keys.length > 0 && (
        <>
          <h3 id="legend-heading">What the counters mean</h3>
          <dl class="legend" data-testid="evidence-legend" aria-labelledby="legend-heading">
            {keys.map((key) => (
              <div key={key} data-key={key}>
                <dt><code>{key}</code></dt>
                <dd>{EVIDENCE_LEGEND[key] ?? 'a counter this console does not describe yet (see docs/deletion.md)'}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </>
  );
}

function LegalHold({ job, receipt }: { job: DeletionJob; receipt: DeletionReceipt | undefined }) {
  const retained = receipt?.retention === 'access_revoked_retained';
  return (
    <>
      <h2>Legal hold and retention</h2>
      <dl class="facts" data-testid="legal-hold">
        <div>
          <dt>Legal hold</dt>
          <dd>{job.legalHold === undefined ? 'none' : <>hold <code data-testid="hold-id">{job.legalHold.holdId}</code>{job.legalHold.reason === undefined ? ' (its reason is for the tenant\'s administrators)' : `: ${job.legalHold.reason}`}</>}</dd>
        </div>
        {receipt !== undefined && (
          <div>
            <dt>Retention</dt>
            <dd data-testid="retention" data-retained={String(retained)}>
              {retained ? 'access revoked, content retained' : 'purged'}
              {receipt.retentionReason !== undefined && <> — {receipt.retentionReason}</>}
            </dd>
          </div>
        )}
        {receipt !== undefined && (
          <div class="wide">
            <dt>Event log</dt>
            <dd>{receipt.eventLog.holdsContent ? 'still holds the content' : 'holds only ciphertext nothing can open'} ({receipt.eventLog.note})</dd>
          </div>
        )}
      </dl>
    </>
  );
}

function ReceiptView({ jobId, receipt }: { jobId: string; receipt: ReceiptState }) {
  return (
    <section aria-labelledby="receipt-heading" class="card">
      <h2 id="receipt-heading">Receipt</h2>
      {receipt.state === 'loading' && <p aria-busy="true">Loading the receipt…</p>}
      {receipt.state === 'none' && <p data-testid="receipt-none">No receipt yet: the job has not finished (this page checks again every 2 s).</p>}
      {receipt.state === 'refused' && <ProblemAlert problem={receipt.problem} lead="The receipt could not be loaded." />}
      {receipt.state === 'loaded' && (
        <>
          <VerdictLine verdict={receipt.verdict} testId="receipt-verdict" />
          <p><DownloadJws jobId={jobId} jws={receipt.jws} /></p>
          <PayloadView payload={receipt.payload} testId="receipt-payload" />
        </>
      )}
    </section>
  );
}
