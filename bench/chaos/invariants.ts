/**
 * The fault suite's invariants (docs/reliability.md "The fault suite"), judged after the load has
 * stopped and the deployment has caught up, by reading the topics (read_committed) and the
 * stores directly, not only through the API:
 * - every acknowledged write is in memory.events exactly once, and in the record hash and the
 *   search index (unless the load deleted it);
 * - no record has two versions with the same number, no event is in the log twice;
 * - an idempotent retry gets the first answer;
 * - every deletion job ends `verified`, or `failed` with its reason, and exactly one receipt per
 *   job is on deletion.receipts, verifying with the published keys;
 * - no search returned a record outside the reader's grants, or a record after its deletion
 *   job had dropped it from the index, and no read with a revoked capability or a removed
 *   grant saw a record;
 * - every answer was a success or a problem+json 503 with Retry-After.
 */
import type { Bus } from '@gm/bus';
import { SignedReceipt, TOPICS, ingestResultsTopic } from '@gm/contracts';
import { verifyReceipt } from '@gm/policy';
import type { SearchIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { ChaosHttp } from './http.ts';
import { traceIngestRequests } from './ingest-trace.ts';
import type { AcknowledgedWrite, Ledger } from './ledger.ts';
import type { ChaosRights } from './rights.ts';

export interface InvariantReport {
  acknowledged: { http: number; async: number; ingest: number };
  /** Acknowledged but missing from the log or from a projection. */
  lost: number;
  /** In the log more than once (an event id twice, or two writes of one record version). */
  duplicated: number;
  idempotentRetries: { probed: number; mismatched: number };
  jobs: { requested: number; verified: number; failed: number; unfinished: number; lostWithState: number };
  receipts: { missing: number; duplicated: number; invalid: number };
  unauthorizedReads: number;
  /** Answers ≥ 500 other than 503, and 503s without problem+json or Retry-After. */
  serverErrors: number;
  bad503: number;
  /**
   * 401 or 403 to a caller whose rights the load never took away (every route but the reads
   * right after a revocation): a denial that only an outage explains is a wrong answer, not a
   * closed one (the store emptied under the API denied every grant holder).
   */
  wrongDenials: number;
  unanswered: number;
  abandonedWrites: number;
  /** The first few findings, spelled out. */
  findings: string[];
}

export interface Judged {
  http: ChaosHttp;
  ledger: Ledger;
  rights: ChaosRights;
  /** The raw bus of the deployment's namespace (sealed content is not needed: ids and versions are clear). */
  bus: Bus;
  state: StateStore;
  index: SearchIndex;
  /** Wall time (epoch ms) of the run clock's zero: the jobs' times are the server's. */
  epochAtZero: number;
  /** How long to wait for the pipeline to finish what was acknowledged, ms. */
  settleMs: number;
  /**
   * When the fault wiped the state store (run clock): what only it held is gone by design —
   * the jobs requested before (docs/reliability.md "Rebuilding from the log") are counted apart.
   */
  stateLostAt?: number;
}

const recordKey = (tenant: string, id: string, version: number) => `${tenant}\u0000${id}\u0000${version}`;
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function judge(j: Judged): Promise<InvariantReport> {
  const findings: string[] = [];
  const finding = (text: string) => {
    if (findings.length < 20) findings.push(text);
  };
  const deadline = performance.now() + j.settleMs;
  const writer = await j.rights.writer();
  const admin = await j.rights.tenantAdmin();
  let lost = 0;

  // The log, read_committed: every event once, every record version written once; the write of each command.
  const eventIds = new Set<string>();
  const writtenVersions = new Map<string, number>();
  const writtenByCommand = new Map<string, { id: string; version: number }>();
  let duplicated = 0;
  for await (const m of j.bus.readAll(TOPICS.events)) {
    const event = m.value as {
      type: string; data: { record?: { tenantId: string; id: string; version: number } }; metadata: { eventId: string; commandId: string };
    };
    if (eventIds.has(event.metadata.eventId)) {
      duplicated += 1;
      finding(`event ${event.metadata.eventId} is in memory.events twice`);
    }
    eventIds.add(event.metadata.eventId);
    const record = event.type === 'MemoryWritten' ? event.data.record : undefined;
    if (record !== undefined) {
      const key = recordKey(record.tenantId, record.id, record.version);
      writtenVersions.set(key, (writtenVersions.get(key) ?? 0) + 1);
      writtenByCommand.set(event.metadata.commandId, { id: record.id, version: record.version });
    }
  }
  for (const [key, count] of writtenVersions) {
    if (count > 1) {
      duplicated += count - 1;
      finding(`record version ${key.replaceAll('\u0000', '/')} was written ${count} times`);
    }
  }

  // Asynchronous writes: a 202 means durably in the log, so each must end accepted. Its outcome
  // is asked of the API; where the API no longer keeps it (the state store was lost), the log says.
  const writes: AcknowledgedWrite[] = [...j.ledger.writes];
  for (const command of j.ledger.asyncCommands) {
    for (;;) {
      const answer = await j.http.send('GET', `/v1/commands/${command.commandId}`, 'GET /v1/commands/{id}', writer);
      const body = answer?.status === 200 ? (answer.body as { state: string; id?: string; version?: number }) : undefined;
      const accepted = body?.state === 'accepted' && body.id !== undefined && body.version !== undefined
        ? { id: body.id, version: body.version }
        : answer?.status === 404 && j.stateLostAt !== undefined ? writtenByCommand.get(command.commandId) : undefined;
      if (accepted !== undefined) {
        writes.push({
          path: 'async', key: command.key, tenant: j.rights.tenant, id: accepted.id, version: accepted.version, subjectId: command.subjectId,
          resource: 'readable', startedAt: command.at, at: command.at, body: command.body,
        });
        break;
      }
      if (body?.state === 'rejected' || performance.now() > deadline) {
        lost += 1;
        finding(`async command ${command.commandId} answered 202 but ended ${body?.state ?? `with status ${answer?.status ?? 'none'}`}`);
        break;
      }
      await pause(200);
    }
  }

  // Ingest: every request Kafka took gets one accepted result; a repeated result repeats the first.
  const results = new Map<string, Array<{ outcome: string; id?: string; version?: number }>>();
  const readResults = async () => {
    results.clear();
    for await (const m of j.bus.readAll(ingestResultsTopic(j.rights.tenant))) {
      const r = m.value as { requestId: string; outcome: string; id?: string; version?: number };
      if (j.ledger.ingestProduced.has(r.requestId)) results.set(r.requestId, [...(results.get(r.requestId) ?? []), r]);
    }
  };
  await readResults();
  while (results.size < j.ledger.ingestProduced.size && performance.now() < deadline) {
    await pause(1_000);
    await readResults();
  }
  let idempotentMismatches = 0;
  const withoutResult = [...j.ledger.ingestProduced.keys()].filter((requestId) => (results.get(requestId) ?? []).length === 0).slice(0, 5);
  const traces = await traceIngestRequests(j.bus, withoutResult, writtenByCommand);
  for (const [requestId, produced] of j.ledger.ingestProduced) {
    const answers = results.get(requestId) ?? [];
    const first = answers[0];
    if (first?.outcome !== 'accepted' || first.id === undefined || first.version === undefined) {
      lost += 1;
      const trace = traces.get(requestId);
      finding(`ingest request ${requestId} was taken by Kafka but ${first === undefined ? `has no result${trace === undefined ? '' : ` (${trace})`}` : `was ${first.outcome}`}`);
      continue;
    }
    if (answers.some((a) => a.id !== first.id || a.version !== first.version)) {
      idempotentMismatches += 1;
      finding(`ingest request ${requestId} got differing results`);
    }
    writes.push({
      path: 'ingest', key: requestId, tenant: j.rights.tenant, id: first.id, version: first.version, subjectId: produced.subjectId,
      resource: 'readable', startedAt: produced.at, at: produced.at, body: produced.body,
    });
  }

  const deletedIds = new Set([...j.ledger.deletions.flatMap((d) => d.recordIds), ...j.ledger.deleteAttempted]);
  for (const w of writes) {
    if (!writtenVersions.has(recordKey(w.tenant, w.id, w.version))) {
      lost += 1;
      finding(`${w.path} write ${w.key} (${w.id} v${w.version}) was acknowledged but is not in memory.events`);
      continue;
    }
    if (deletedIds.has(w.id)) continue;
    const [meta, doc] = await Promise.all([j.state.records.get(w.tenant, w.id), j.index.get(w.tenant, w.id)]);
    if (meta === null || meta.version < w.version || doc === null) {
      lost += 1;
      finding(`${w.path} write ${w.id} v${w.version} is in the log but ${meta === null ? 'not in the record hash' : doc === null ? 'not in the search index' : `the record hash holds v${meta.version}`}`);
    }
  }

  // An idempotent retry: the same key and body again answers the first result.
  const probes = j.ledger.writes.filter((w) => !deletedIds.has(w.id)).filter((_, i, all) => i % Math.max(1, Math.floor(all.length / 20)) === 0).slice(0, 20);
  for (const w of probes) {
    const answer = await j.http.retried(
      () => j.http.send('POST', '/v1/memories', 'POST /v1/memories (idempotent retry)', writer, w.body, { 'idempotency-key': w.key }), () => performance.now() > deadline,
    );
    const body = answer?.body as { id?: string; version?: number } | undefined;
    if (answer?.status !== 201 || body?.id !== w.id || body.version !== w.version) {
      idempotentMismatches += 1;
      finding(`retrying ${w.key} answered ${answer?.status ?? 'nothing'} ${JSON.stringify(body)} instead of ${w.id} v${w.version}`);
    }
  }

  // Deletion jobs: each ends verified, or failed with its reason; the time its index copy went.
  const jobs = { requested: j.ledger.deletions.length, verified: 0, failed: 0, unfinished: 0, lostWithState: 0 };
  const droppedAt = new Map<string, number>();
  for (const d of j.ledger.deletions) {
    for (;;) {
      const answer = await j.http.send('GET', `/v1/deletion-jobs/${d.jobId}`, 'GET /v1/deletion-jobs/{id}', admin);
      const job = answer?.status === 200
        ? (answer.body as { status: string; failureReason?: string; evidence?: Array<{ target: string; status: string; completedAt?: string }> })
        : undefined;
      if (job?.status === 'verified' || job?.status === 'failed') {
        if (job.status === 'verified') jobs.verified += 1;
        else {
          jobs.failed += 1;
          if (!job.failureReason) finding(`job ${d.jobId} failed without a reason`);
        }
        const keyword = job.evidence?.find((e) => e.target === 'keyword' && e.completedAt !== undefined);
        if (keyword?.completedAt !== undefined) for (const id of d.recordIds) droppedAt.set(id, Date.parse(keyword.completedAt) - j.epochAtZero);
        break;
      }
      if (answer?.status === 404 && j.stateLostAt !== undefined && d.at < j.stateLostAt) {
        jobs.lostWithState += 1;
        break;
      }
      if (performance.now() > deadline) {
        jobs.unfinished += 1;
        finding(`job ${d.jobId} (${d.mode}) is still ${job?.status ?? `unreadable (${answer?.status ?? 'no answer'})`}`);
        break;
      }
      await pause(250);
    }
  }

  // Receipts: exactly one per job on deletion.receipts, each verifying with the published keys.
  const keysAnswer = await j.http.send('GET', '/v1/receipt-keys', 'GET /v1/receipt-keys', admin);
  const publishedKeys = ((keysAnswer?.body as { keys?: Parameters<typeof verifyReceipt>[1] } | undefined)?.keys ?? []);
  const receiptsPerJob = new Map<string, number>();
  const requestedJobs = new Set(j.ledger.deletions.map((d) => d.jobId));
  let invalidReceipts = 0;
  for await (const m of j.bus.readAll(TOPICS.deletionReceipts)) {
    const parsed = SignedReceipt.safeParse(m.value);
    if (!parsed.success || !requestedJobs.has(parsed.data.jobId)) continue;
    receiptsPerJob.set(parsed.data.jobId, (receiptsPerJob.get(parsed.data.jobId) ?? 0) + 1);
    try {
      const { payload } = await verifyReceipt(parsed.data.jws, publishedKeys);
      if (payload.jobId !== parsed.data.jobId) throw new Error('names another job');
    } catch (err) {
      invalidReceipts += 1;
      finding(`the receipt of job ${parsed.data.jobId} does not verify: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const finished = jobs.verified + jobs.failed;
  const receipts = {
    missing: Math.max(0, finished - [...receiptsPerJob.keys()].length),
    duplicated: [...receiptsPerJob.values()].reduce((n, c) => n + Math.max(0, c - 1), 0),
    invalid: invalidReceipts,
  };
  if (receipts.missing > 0) finding(`${receipts.missing} finished job(s) have no receipt on deletion.receipts`);
  if (receipts.duplicated > 0) finding(`${receipts.duplicated} receipt(s) on deletion.receipts repeat a job's`);

  // Reads: nothing outside the reader's grants, nothing after its deletion dropped it, nothing after a revocation.
  const hidden = new Set(writes.filter((w) => w.resource === 'hidden').map((w) => w.id));
  let unauthorizedReads = 0;
  for (const s of j.ledger.searches) {
    for (const id of s.ids) {
      const dropped = droppedAt.get(id);
      if (hidden.has(id)) {
        unauthorizedReads += 1;
        finding(`the reader's search at ${s.startedAt.toFixed(0)} ms returned ${id}, a record of a resource it has no grant on`);
      } else if (dropped !== undefined && s.startedAt > dropped) {
        unauthorizedReads += 1;
        finding(`a search at ${s.startedAt.toFixed(0)} ms returned ${id}, dropped from the index by its deletion at ${dropped.toFixed(0)} ms`);
      }
    }
  }
  for (const r of j.ledger.revocations) {
    if (r.leakedAfter > 0) {
      unauthorizedReads += r.leakedAfter;
      finding(`a read right after a ${r.kind} ${r.kind === 'grant' ? 'removal' : 'revocation'} (acknowledged at ${r.acknowledgedAt.toFixed(0)} ms) still saw records`);
    }
  }

  const serverErrors = j.ledger.answers.filter((a) => a.status >= 500 && a.status !== 503);
  const bad503 = j.ledger.answers.filter((a) => a.status === 503 && (!a.problem || !a.retryAfter));
  const wrongDenials = j.ledger.answers.filter((a) => (a.status === 401 || a.status === 403) && !a.route.endsWith('(revoked)'));
  const unanswered = j.ledger.answers.filter((a) => a.networkError !== undefined);
  for (const a of wrongDenials.slice(0, 3)) finding(`${a.route} answered ${a.status} ${a.code ?? ''} to a caller holding the rights, at ${a.at.toFixed(0)} ms`);
  for (const a of serverErrors.slice(0, 3)) finding(`${a.route} answered ${a.status} ${a.code ?? ''} at ${a.at.toFixed(0)} ms`);
  for (const a of bad503.slice(0, 3)) finding(`${a.route} answered 503 without ${a.problem ? 'Retry-After' : 'problem+json'} at ${a.at.toFixed(0)} ms`);
  for (const a of unanswered.slice(0, 3)) finding(`${a.route} got no answer (${a.networkError}) at ${a.at.toFixed(0)} ms`);

  return {
    acknowledged: {
      http: writes.filter((w) => w.path === 'http').length, async: writes.filter((w) => w.path === 'async').length, ingest: writes.filter((w) => w.path === 'ingest').length,
    },
    lost, duplicated,
    idempotentRetries: { probed: probes.length + j.ledger.ingestProduced.size, mismatched: idempotentMismatches },
    jobs, receipts, unauthorizedReads,
    serverErrors: serverErrors.length, bad503: bad503.length, wrongDenials: wrongDenials.length, unanswered: unanswered.length, abandonedWrites: j.ledger.abandoned,
    findings,
  };
}

/** The violations that fail a run: what must be zero in every scenario. */
export function violations(r: InvariantReport): string[] {
  const v: string[] = [];
  if (r.lost > 0) v.push(`${r.lost} acknowledged write(s) lost`);
  if (r.duplicated > 0) v.push(`${r.duplicated} duplicate(s) in the log`);
  if (r.idempotentRetries.mismatched > 0) v.push(`${r.idempotentRetries.mismatched} idempotent retr(ies) answered differently`);
  if (r.jobs.unfinished > 0) v.push(`${r.jobs.unfinished} deletion job(s) unfinished`);
  if (r.receipts.missing + r.receipts.duplicated + r.receipts.invalid > 0) v.push(`receipts: ${JSON.stringify(r.receipts)}`);
  if (r.unauthorizedReads > 0) v.push(`${r.unauthorizedReads} unauthorized read(s)`);
  if (r.serverErrors > 0) v.push(`${r.serverErrors} 5xx other than 503`);
  if (r.bad503 > 0) v.push(`${r.bad503} 503 without problem+json and Retry-After`);
  if (r.wrongDenials > 0) v.push(`${r.wrongDenials} denial(s) of a caller holding the rights`);
  if (r.unanswered > 0) v.push(`${r.unanswered} request(s) without an answer`);
  return v;
}
