/**
 * Verifiable forgetting end to end (§8), over HTTP: write a record, delete it, and time from
 * sending the DELETE to the moment its signed receipt can be fetched — tombstone, fan-out to
 * every target, acks, purge, the verifier's replay probes, signing. A receipt that does not say
 * `verified`, or none within the deadline, aborts the run: that is a bug, not a number.
 */
import type { Bus } from '@gm/bus';
import { call, issueToken, type HttpTarget } from './administration.ts';
import { deletionHops, type DeletionHop } from './deletion-hops.ts';
import { write, writeBody } from './http-probe.ts';
import { progress, summarize, type Summary } from './stats.ts';

export interface DeletionResult {
  /** DELETE /v1/memories/{id} until its 202. */
  accepted: Summary;
  /** DELETE sent → GET /v1/deletion-jobs/{id}/receipt answers 200 (status verified). */
  receipt: Summary;
  /** Where the time went, per step of the jobs' fan-out (deletion-hops.ts); absent without the runtime's log. */
  hops?: DeletionHop[];
}

const RECEIPT_DEADLINE_MS = 120_000;
/** Short: the receipt comes some 15 ms after the request, and the figure is only as fine as this. */
const POLL_MS = 5;

/**
 * `log`, the runtime's bus, to read the jobs' messages back for their per-step times.
 * `inFlight` deletions run at once: on the distributed runtime each receipt waits for the next
 * renewal of Elasticsearch's retention leases (up to 30 s, docs/deletion.md#erasure-on-disk),
 * and deletions one after another would spend minutes measuring that one wait.
 */
export async function measureDeletion(
  target: HttpTarget, tenant: string, n: number, label: string, log?: Pick<Bus, 'readAll'>, inFlight = 1,
): Promise<DeletionResult> {
  const token = await issueToken(target, tenant, ['write', 'search', 'read', 'request_delete']);
  const accepted: number[] = [];
  const receipt: number[] = [];
  const jobIds = new Set<string>();
  let nextIndex = 0;
  const worker = async () => {
    for (let i = nextIndex++; i < n; i = nextIndex++) await deleteOne(i);
  };
  const deleteOne = async (i: number) => {
    const id = `bench-deletion-${i}`;
    await write(target, token, writeBody(`deletion probe ${i} heron lockbox ${i * 7919}`, `subj-deletion-${i % 5}`, id));
    const t0 = performance.now();
    const deleted = await fetch(`${target.url}/v1/memories/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    const jobId = ((await deleted.json()) as { jobId?: string }).jobId;
    if (deleted.status !== 202 || jobId === undefined) throw new Error(`${label}: delete answered ${deleted.status}`);
    accepted.push(performance.now() - t0);
    jobIds.add(jobId);
    for (;;) {
      const res = await call(`${target.url}/v1/deletion-jobs/${jobId}/receipt`, token, undefined, true);
      if (res.status === 200) {
        const status = (res.body as { payload?: { status?: string } } | null)?.payload?.status;
        if (status !== 'verified') throw new Error(`${label}: the receipt of job ${jobId} says ${String(status)}`);
        receipt.push(performance.now() - t0);
        break;
      }
      // Not signed yet: 409 MEM_NOT_YET_AVAILABLE, or 404 while the orchestrator has not recorded
      // the job it was just handed (anything else is a failure of the run).
      const notYet = res.status === 404 || (res.status === 409 && (res.body as { code?: string } | null)?.code === 'MEM_NOT_YET_AVAILABLE');
      if (!notYet) {
        throw new Error(`${label}: the receipt route answered ${res.status} ${JSON.stringify(res.body)}`);
      }
      if (performance.now() - t0 > RECEIPT_DEADLINE_MS) throw new Error(`${label}: no receipt for job ${jobId} within ${RECEIPT_DEADLINE_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, n)) }, worker));
  const result = { accepted: summarize(accepted), receipt: summarize(receipt), ...(log === undefined ? {} : { hops: await deletionHops(log, jobIds) }) };
  progress(`${label}: ${n} deletions (${inFlight} at a time), request → verified receipt p50 ${result.receipt.p50.toFixed(0)} ms`);
  return result;
}
