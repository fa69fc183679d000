import type { FastifyInstance } from 'fastify';
import {
  GovernedMemoryError, QuarantineQuery, RejectRequest, VersionedRequest, type RejectionReason, WriteMemoryBatchRequest, WriteMemoryRequest, type MemoryCommand, type Visibility,
} from '@gm/contracts';
import { authorizesPartition } from '@gm/policy';
import { authorized } from '../authorization.ts';
import type { BrokerDeps } from '../deps.ts';
import { idempotencyKey, parseBody, parseQuery } from '../http.ts';
import { notFound } from '../problem.ts';
import { partitionOf, readHistory, readRecord } from '../retrieval.ts';
import { APPLIED_PREFERENCE, PREFERENCE_APPLIED_HEADER, postAsync, writeWait } from '../write-preference.ts';
import { READ_YOUR_WRITES_GROUPS, STORED_GROUPS } from '../command-gateway.ts';
import { answerMutation, requestPoint } from '../consistency.ts';
import { metadataFor } from '../metadata.ts';
import { admitWrite, writeAuthority } from '@gm/write-edge';
import { BATCH_BODY_LIMIT_FACTOR, writeBatch } from '../write-batch.ts';

export function memoryRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  app.post('/v1/memories', async (request, reply) => {
    const { claims, partitions } = authorized(request, 'partitions');
    const carried = requestPoint(deps, request, claims.tenant);
    const body = parseBody(WriteMemoryRequest, request.body);
    const wait = writeWait(request);
    if (wait === 'async') await deps.backlog.admitAsync();
    const write = await admitWrite(deps, claims, writeAuthority(deps.pdp, claims, partitions), body, idempotencyKey(request));
    if (wait === 'async') {
      const commands = await postAsync(deps, claims, [write.command]);
      const consistencyToken = answerMutation(deps, reply, claims.tenant, carried, { commands });
      reply.header(PREFERENCE_APPLIED_HEADER, APPLIED_PREFERENCE.async);
      return reply.code(202).send({ commandId: write.command.metadata.commandId, consistencyToken });
    }
    const storedOnly = wait === 'stored';
    const result = await deps.gateway.send(write.command, storedOnly ? STORED_GROUPS : READ_YOUR_WRITES_GROUPS);
    answerMutation(deps, reply, claims.tenant, carried, { ...result, storedOnly });
    if (storedOnly) reply.header(PREFERENCE_APPLIED_HEADER, APPLIED_PREFERENCE.stored);
    return reply.code(201).send({ id: result.id ?? write.id, version: result.version, status: result.status });
  });

  // `::` is a literal colon in a Fastify path: the route is /v1/memories:batch.
  app.post('/v1/memories::batch', { bodyLimit: BATCH_BODY_LIMIT_FACTOR * deps.config.bodyLimitBytes }, async (request, reply) => {
    const { claims, partitions } = authorized(request, 'partitions');
    const carried = requestPoint(deps, request, claims.tenant);
    const { items } = parseBody(WriteMemoryBatchRequest, request.body);
    const wait = writeWait(request);
    if (wait === 'async') await deps.backlog.admitAsync();
    const answer = await writeBatch(deps, claims, partitions, items, request.id, wait);
    const consistencyToken = answerMutation(deps, reply, claims.tenant, carried, { ...answer, storedOnly: wait === 'stored' });
    if (wait !== 'searchable') reply.header(PREFERENCE_APPLIED_HEADER, APPLIED_PREFERENCE[wait]);
    return reply.code(wait === 'async' ? 202 : 200).send({ items: answer.items, consistencyToken });
  });

  // A rejection moves nothing: its body has no visibility (422 when one is sent).
  const review = (path: string, type: 'PromoteMemory' | 'RejectQuarantined', action: 'promote' | 'review') =>
    app.post(path, async (request, reply) => {
      const { claims, record: meta } = authorized(request, 'record');
      const carried = requestPoint(deps, request, claims.tenant);
      const id = meta.id;
      const body: { expectedVersion: number; visibility?: Visibility | undefined; reason?: RejectionReason | undefined } =
        parseBody(type === 'PromoteMemory' ? VersionedRequest : RejectRequest, request.body);
      if (body.visibility !== undefined && body.visibility !== meta.visibility) {
        // A promotion that moves the record moves it only where this reviewer may promote to.
        const target = partitionOf({ ...meta, visibility: body.visibility });
        if (!(await authorizesPartition(deps.pdp, { claims, action }, target))) {
          throw new GovernedMemoryError('MEM_FORBIDDEN', 'no grant lets this reviewer move the record to that visibility');
        }
      }
      const metadata = await metadataFor(deps, claims, meta.subjectId, idempotencyKey(request), { operation: type, body: { id, ...body } });
      const command: MemoryCommand =
        type === 'PromoteMemory'
          ? { type, data: { id, expectedVersion: body.expectedVersion, ...(body.visibility ? { visibility: body.visibility } : {}) }, metadata }
          : { type, data: { id, expectedVersion: body.expectedVersion, ...(body.reason ? { reason: body.reason } : {}) }, metadata };
      const result = await deps.gateway.send(command);
      answerMutation(deps, reply, claims.tenant, carried, result);
      return reply.code(200).send({ id, version: result.version, status: result.status });
    });
  review('/v1/memories/:id/promote', 'PromoteMemory', 'promote');
  review('/v1/memories/:id/reject', 'RejectQuarantined', 'review');

  app.get('/v1/memories/:id', async (request) => {
    const { claims, record: meta } = authorized(request, 'record');
    const record = await readRecord(deps, claims, meta.id, deps.clock.now());
    if (record === null) throw notFound();
    return record;
  });

  app.get('/v1/memories/:id/history', async (request) => {
    const { claims, record: meta, rejected } = authorized(request, 'history');
    const history = await readHistory(deps, claims, meta.id, { rejected });
    if (history === null) throw notFound();
    return history;
  });

  app.get('/v1/review/quarantine', async (request) => {
    const { claims, partitions: open } = authorized(request, 'partitions');
    const { subjectId } = parseQuery(QuarantineQuery, request);
    const now = deps.clock.now().getTime();
    const partitions = new Set(open);
    // The subject narrows the same listing: no record outside the reviewer's partitions, and the same empty list for an unknown subject.
    const records = (await deps.state.records.quarantined(claims.tenant))
      .filter((m) => partitions.has(partitionOf(m)) && Date.parse(m.expiresAt) > now && (subjectId === undefined || m.subjectId === subjectId))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    const items = [];
    for (const meta of records) {
      const content = await deps.state.contents.get(claims.tenant, meta.id);
      if (content !== null) items.push({ ...meta, content });
    }
    return { items };
  });
}
