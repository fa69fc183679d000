import type { FastifyInstance, FastifyRequest } from 'fastify';
import { newUlid } from '@gm/ids';
import {
  DeletionJobListQuery, DeletionReceipt, DeletionScope, GovernedMemoryError, LIMITS,
  type CapabilityClaims, type DeletionJob, type MemoryCommand, type RecordMeta,
} from '@gm/contracts';
import { isLive } from '@gm/domain';
import { decodeReceiptPayload } from '@gm/policy/receipts';
import { authorized } from '../authorization.ts';
import type { BrokerDeps } from '../deps.ts';
import { idempotencyKey, pathId } from '../http.ts';
import { metadataFor } from '../metadata.ts';
import { partitionOf } from '../retrieval.ts';
import { answerMutation, requestPoint } from '../consistency.ts';
import { ListingCursors } from '../listing-cursor.ts';

export function deletionRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  const cursors = new ListingCursors(deps.issuerCredential);
  app.delete('/v1/memories/:id', async (request, reply) => {
    const { claims, record: meta } = authorized(request, 'record');
    const carried = requestPoint(deps, request, claims.tenant);
    const id = meta.id;
    const scope = deletionScope(request);
    const jobId = newUlid();
    const copies = scope === 'content' ? await deletableCopies(deps, claims, meta) : [];
    // The fingerprint is the request (id and scope), not the copies found: a retry finds the same job.
    const fingerprint = scope === 'content' ? { id, scope } : { id };
    const command: MemoryCommand = {
      type: 'DeleteMemory', data: { id, jobId, ...(copies.length > 0 ? { copies } : {}) },
      metadata: await metadataFor(deps, claims, meta.subjectId, idempotencyKey(request), { operation: 'DeleteMemory', body: fingerprint }),
    };
    const result = await deps.gateway.send(command);
    answerMutation(deps, reply, claims.tenant, carried, result);
    return reply.code(202).send({ jobId: result.jobId ?? jobId });
  });

  /**
   * Right to be forgotten, by right (§8.1): the subject's records the requester may delete —
   * in the partitions the PDP opens to it for `request_delete`, or every one of the tenant for
   * a privacy officer (`request_delete` on the tenant). The answer is the same whether the
   * subject had such records or not, and whether it had others.
   */
  app.post('/v1/subjects/:subjectId/forget', async (request, reply) => {
    const { claims, within } = authorized(request, 'subject');
    const carried = requestPoint(deps, request, claims.tenant);
    const subjectId = pathId(request, 'subjectId');
    const jobId = newUlid();
    const command: MemoryCommand = {
      type: 'ForgetSubject', data: { jobId, within }, metadata: await metadataFor(deps, claims, subjectId, idempotencyKey(request), { operation: 'ForgetSubject', body: { subjectId } }),
    };
    const result = await deps.gateway.send(command);
    answerMutation(deps, reply, claims.tenant, carried, result);
    return reply.code(202).send({ jobId: result.jobId ?? jobId });
  });

  app.get('/v1/deletion-jobs/:id', async (request) => {
    const { job, tenantAdmin } = authorized(request, 'job');
    return jobView(job, tenantAdmin);
  });

  /**
   * The tenant's jobs for its administrator (Cedar: admin on the tenant), the caller's principal's
   * own otherwise; oldest first (or `order=newest`) from `since`, `limit` a page (50), and a
   * cursor while there is more. `status` and `subjectId` only narrow what the caller may see: a
   * subject's jobs requested by others answer as no jobs at all. Jobs requested before this
   * listing existed are not indexed.
   */
  app.get('/v1/deletion-jobs', async (request) => {
    const { claims, tenantAdmin, own } = authorized(request, 'jobs');
    const parsed = DeletionJobListQuery.safeParse(request.query ?? {});
    if (!parsed.success) {
      throw new GovernedMemoryError('MEM_VALIDATION', `query: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`).join('; ')}`);
    }
    const query = parsed.data;
    const order = query.order ?? 'oldest';
    const owner = { tenant: claims.tenant, principal: claims.act.sub, order };
    const after = query.cursor === undefined ? undefined : cursors.open(query.cursor, owner);
    // Neither the tenant's administrator nor a requester: no job to list, and nothing is read.
    if (!tenantAdmin && !own) return { items: [] };
    const { jobs, next } = await deps.state.jobs.list(claims.tenant, {
      sinceMs: query.since === undefined ? 0 : Date.parse(query.since), order, ...(after ? { after } : {}), limit: query.limit ?? 50,
      ...(tenantAdmin ? {} : { requestedBy: claims.act.sub }),
      keep: (job) => (tenantAdmin || (own && job.requestedBy.principalId === claims.act.sub))
        && (query.status === undefined || job.status === query.status)
        && (query.subjectId === undefined || job.subjectId === query.subjectId),
    });
    return { items: jobs.map((job) => jobView(job, tenantAdmin)), ...(next ? { nextCursor: cursors.seal(next, owner) } : {}) };
  });

  /**
   * The job's signed receipt (§8.4), once the receipt-verifier made it (before: 409
   * MEM_NOT_YET_AVAILABLE, retriable, naming the job; the job itself is one the caller may see): JSON
   * `{receipt: <compact JWS>, payload}` by default, the bare JWS with `Accept: application/jose`.
   * The payload is decoded from the stored JWS, so it is exactly what was signed. The principal
   * who requested the job also gets `openings`, the keys of the payload's content commitments,
   * while they are kept: it holds the content, so only it can show what the receipt covered.
   */
  app.get('/v1/deletion-jobs/:id/receipt', async (request, reply) => {
    const { claims, job } = authorized(request, 'job');
    const stored = await deps.state.receipts.get(job.tenant, job.jobId);
    if (!stored) {
      throw new GovernedMemoryError('MEM_NOT_YET_AVAILABLE', `the receipt of deletion job ${job.jobId} is not signed yet (the job is ${job.status}); retry`, { retriable: true });
    }
    if (prefersJose(request.headers.accept)) return reply.type('application/jose').send(stored.jws);
    const payload = DeletionReceipt.parse(decodeReceiptPayload(stored.jws));
    if (claims.tenant !== payload.tenant || claims.act.sub !== payload.requestedBy.principalId) return { receipt: stored.jws, payload };
    const kept = await deps.state.receipts.openings(job.tenant, job.jobId, payload.recordIds);
    // Only an opening of what was signed (receipts signed before commitments have none).
    const openings = (payload.contentCommitments ?? []).flatMap(({ recordId, commitment }) => {
      const entry = kept.get(recordId);
      return entry === undefined || entry.commitment !== commitment ? [] : [{ recordId, opening: entry.opening }];
    });
    return { receipt: stored.jws, payload, ...(openings.length > 0 ? { openings } : {}) };
  });

  /** The public keys that sign receipts (a JWKS), for verifying receipts offline. Public: no capability needed. */
  app.get('/v1/receipt-keys', async () => ({ keys: await deps.state.receipts.publicKeys() }));
}

/** A legal hold's reason is for those who may read holds (the tenant's administrators); its id tells a requester why its job kept content. */
function jobView(job: DeletionJob, tenantAdmin: boolean): DeletionJob {
  if (tenantAdmin || job.legalHold === undefined) return job;
  const { reason: _reason, ...hold } = job.legalHold;
  return { ...job, legalHold: hold };
}

/** `?scope=record` (the default) or `?scope=content`; anything else is refused, never read as the default. */
function deletionScope(request: FastifyRequest): DeletionScope {
  const raw = (request.query as Record<string, unknown> | undefined)?.scope;
  if (raw === undefined) return 'record';
  const parsed = DeletionScope.safeParse(raw);
  if (!parsed.success) throw new GovernedMemoryError('MEM_VALIDATION', 'scope: "record" or "content", given once');
  return parsed.data;
}

/**
 * The other live records of the record's subject that hold the same content and that this
 * capability may delete (the same rule as the record itself: a partition it may
 * `request_delete` in, not tombstoned). The ones it may not delete stay, and the receipt names
 * them as residual if they are live when the replays run.
 */
async function deletableCopies(deps: BrokerDeps, claims: CapabilityClaims, meta: RecordMeta): Promise<string[]> {
  const ids = (await deps.state.records.idsOfSubject(claims.tenant, meta.subjectId)).filter((other) => other !== meta.id);
  const same = [...(await deps.state.records.getMany(claims.tenant, ids)).values()]
    .filter((m) => m.contentHash === meta.contentHash && isLive(m.status));
  if (same.length === 0) return [];
  const partitions = new Set(await deps.pdp.authorizedPartitions({ claims, action: 'request_delete' }));
  const tombstoned = await deps.state.tombstones.filterTombstoned(claims.tenant, same.map((m) => m.id));
  return same
    .filter((m) => partitions.has(partitionOf(m)) && !tombstoned.has(m.id))
    .map((m) => m.id)
    .sort()
    .slice(0, LIMITS.maxDeletionCopies);
}

const prefersJose = (accept: string | undefined): boolean =>
  accept !== undefined && accept.split(',').some((part) => part.trim().split(';')[0]?.trim().toLowerCase() === 'application/jose');
