import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import {
  GovernedMemoryError, LIVE_STATUSES, VersionedRequest, WriteMemoryRequest, actorFromClaims,
  type Action, type CapabilityClaims, type MemoryCommand, type MessageMetadata, type RecordMeta,
} from '@gm/contracts';
import { partitionKey } from '@gm/domain';
import { newUlid } from '@gm/ids';
import { authorizesPartition, inScope } from '@gm/policy';
import { authenticate } from '../auth.ts';
import type { BrokerDeps } from '../deps.ts';
import { idempotencyKey, parseBody, pathId } from '../http.ts';
import { notFound } from '../problem.ts';
import { partitionOf, readRecord } from '../retrieval.ts';
import { READ_YOUR_WRITES_HEADER, readYourWritesValue } from '../command-gateway.ts';

export async function metadataFor(deps: BrokerDeps, claims: CapabilityClaims, subjectId: string, key?: string): Promise<MessageMetadata> {
  return {
    commandId: newUlid(),
    tenantId: claims.tenant,
    subjectId,
    actor: actorFromClaims(claims),
    now: deps.clock.now().toISOString(),
    policyRevision: await deps.state.policyRevisions.current(claims.tenant),
    ...(key === undefined ? {} : { idempotencyKey: key }),
  };
}

/** The partitions the policy decision point opens to this capability for `action`. */
export const authorizedPartitions = (deps: BrokerDeps, claims: CapabilityClaims, action: Action): Promise<string[]> =>
  deps.pdp.authorizedPartitions({ claims, action });

/** The record, if this capability may act on it with `action`; otherwise the uniform 404. */
export async function authorizedRecord(
  deps: BrokerDeps, claims: CapabilityClaims, id: string, action: 'promote' | 'review' | 'request_delete',
): Promise<RecordMeta> {
  const meta = await deps.state.records.get(claims.tenant, id);
  if (!meta) throw notFound();
  const partitions = await authorizedPartitions(deps, claims, action);
  const tombstoned = (await deps.state.tombstones.filterTombstoned(claims.tenant, [id])).size > 0;
  if (tombstoned || !partitions.includes(partitionOf(meta)) || !LIVE_STATUSES.includes(meta.status)) throw notFound();
  return meta;
}

export function memoryRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  app.post('/v1/memories', async (request, reply) => {
    const claims = await authenticate(request, deps.verifier, deps.clock, 'write');
    const body = parseBody(WriteMemoryRequest, request.body);
    const owner = { principalId: claims.act.sub, kind: claims.act.kind };
    // §5.2: who writes comes from the capability; naming anyone else is impersonation.
    if ((body.tenantId !== undefined && body.tenantId !== claims.tenant) || (body.agentId !== undefined && body.agentId !== claims.sub)) {
      throw new GovernedMemoryError('MEM_IMPERSONATION', 'the body names another tenant or agent than the capability');
    }
    if (body.owner && (body.owner.principalId !== owner.principalId || body.owner.kind !== owner.kind)) {
      throw new GovernedMemoryError('MEM_IMPERSONATION', 'the body names another owner than the capability\'s principal');
    }
    if (!inScope(claims, body.resource)) throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'the resource is outside the capability\'s scopes');
    // §5.3: a writer creates only where a grant lets it write (restricted partitions need an explicit one).
    const target = partitionKey({
      tenantId: claims.tenant, resource: body.resource, visibility: body.visibility, sensitivity: body.sensitivity, ownerPrincipalId: owner.principalId,
    });
    if (!(await authorizesPartition(deps.pdp, { claims, action: 'write' }, target))) {
      throw new GovernedMemoryError('MEM_FORBIDDEN', 'no grant lets this capability write to that partition');
    }
    const purposes = body.purposes ?? [claims.purpose];
    if (!purposes.includes(claims.purpose)) {
      throw new GovernedMemoryError('CAP_SCOPE_DENIED', 'a writer must tag its own purpose among the record\'s purposes');
    }
    const key = idempotencyKey(request);
    const id = body.id ?? newUlid();
    if (!(await deps.state.idClaims.claim(claims.tenant, id, body.subjectId))) {
      throw new GovernedMemoryError('MEM_ID_TAKEN', 'this id is in use for another subject');
    }
    const command: MemoryCommand = {
      type: 'WriteMemory',
      data: {
        id,
        expectedVersion: body.expectedVersion,
        owner,
        resource: body.resource,
        visibility: body.visibility,
        sensitivity: body.sensitivity,
        purposes,
        kind: body.kind,
        content: body.content,
        contentHash: createHash('sha256').update(body.content, 'utf8').digest('hex'),
        provenance: body.provenance,
        trust: body.trust,
        confidence: body.confidence,
        ...(body.expiresAt === undefined ? {} : { expiresAt: body.expiresAt }),
        ...(body.supersedesId === undefined ? {} : { supersedesId: body.supersedesId }),
      },
      metadata: await metadataFor(deps, claims, body.subjectId, key),
    };
    const result = await deps.gateway.send(command);
    reply.header(READ_YOUR_WRITES_HEADER, readYourWritesValue(result));
    return reply.code(201).send({ id: result.id ?? id, version: result.version, status: result.status });
  });

  const review = (path: string, type: 'PromoteMemory' | 'RejectQuarantined', action: 'promote' | 'review') =>
    app.post(path, async (request, reply) => {
      const claims = await authenticate(request, deps.verifier, deps.clock, action);
      const id = pathId(request, 'id');
      const body = parseBody(VersionedRequest, request.body);
      const meta = await authorizedRecord(deps, claims, id, action);
      if (body.visibility !== undefined && body.visibility !== meta.visibility) {
        // A promotion that moves the record moves it only where this reviewer may promote to.
        const target = partitionOf({ ...meta, visibility: body.visibility });
        if (!(await authorizesPartition(deps.pdp, { claims, action }, target))) {
          throw new GovernedMemoryError('MEM_FORBIDDEN', 'no grant lets this reviewer move the record to that visibility');
        }
      }
      const metadata = await metadataFor(deps, claims, meta.subjectId, idempotencyKey(request));
      const command: MemoryCommand =
        type === 'PromoteMemory'
          ? { type, data: { id, expectedVersion: body.expectedVersion, ...(body.visibility ? { visibility: body.visibility } : {}) }, metadata }
          : { type, data: { id, expectedVersion: body.expectedVersion }, metadata };
      const result = await deps.gateway.send(command);
      reply.header(READ_YOUR_WRITES_HEADER, readYourWritesValue(result));
      return reply.code(200).send({ id, version: result.version, status: result.status });
    });
  review('/v1/memories/:id/promote', 'PromoteMemory', 'promote');
  review('/v1/memories/:id/reject', 'RejectQuarantined', 'review');

  app.get('/v1/memories/:id', async (request) => {
    const claims = await authenticate(request, deps.verifier, deps.clock, 'read');
    const record = await readRecord(deps, claims, pathId(request, 'id'), deps.clock.now());
    if (record === null) throw notFound();
    return record;
  });

  app.get('/v1/review/quarantine', async (request) => {
    const claims = await authenticate(request, deps.verifier, deps.clock, 'review');
    const now = deps.clock.now().getTime();
    const partitions = new Set(await authorizedPartitions(deps, claims, 'review'));
    const records = (await deps.state.records.quarantined(claims.tenant))
      .filter((m) => partitions.has(partitionOf(m)) && Date.parse(m.expiresAt) > now)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    const items = [];
    for (const meta of records) {
      const content = await deps.state.contents.get(claims.tenant, meta.id);
      if (content !== null) items.push({ ...meta, content });
    }
    return { items };
  });
}
