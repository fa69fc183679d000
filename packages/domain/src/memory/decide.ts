import {
  ERASED_CONTENT_HASH, GovernedMemoryError,
  type AcceptedResult, type CommandOf, type MemoryCommand, type MemoryEvent, type MessageMetadata, type RecordMeta,
  type Visibility,
} from '@gm/contracts';
import { keyOf } from '@gm/ids/key-encoding';
import { isWidening, recordPartition } from '../partition.ts';
import { resolveExpiry, type TtlPolicy } from '../ttl.ts';
import type { RecordState, SubjectState } from './state.ts';
import { isLive, isRetained, isRetired } from './transitions.ts';

export interface DecideContext {
  ttl: TtlPolicy;
  /** How long an idempotency key returns its first result. */
  idempotencyWindowMs: number;
}

export interface Decision {
  events: MemoryEvent[];
  /** What the caller is told; for a retried idempotency key, the first result. */
  result: AcceptedResult;
}

const fail = (code: ConstructorParameters<typeof GovernedMemoryError>[0], message: string): never => {
  throw new GovernedMemoryError(code, message);
};

/**
 * The idempotency slot of a command: the caller's key, else its commandId (§5.6), per tenant,
 * principal and agent. The principal (the capability's `act.sub`) is the identity: an agent id
 * alone is not, so another principal whose capability names the same agent would otherwise be
 * answered with this one's first result, or learn from a mismatch that the key was used and
 * whether a guess of its content is right. Built by the one injective key encoding (`keyOf`,
 * §4): ids may hold ':', and the parts must never run into each other. The `key`/`cmd` part keeps
 * a caller's key apart from a commandId.
 */
export const idempotencySlot = (m: MessageMetadata): string =>
  m.idempotencyKey === undefined
    ? keyOf(m.tenantId, m.actor.principalId, m.actor.agentId, 'cmd', m.commandId)
    : keyOf(m.tenantId, m.actor.principalId, m.actor.agentId, 'key', m.idempotencyKey);

/**
 * decide(command, state) → events, pure. Throws GovernedMemoryError for every rule of design
 * §3 and §5 that the command breaks; the caller turns that into a rejected reply.
 */
export function decide(command: MemoryCommand, state: SubjectState, ctx: DecideContext): Decision {
  const previous = state.idempotency[idempotencySlot(command.metadata)];
  if (previous && Date.parse(command.metadata.now) - Date.parse(previous.at) <= ctx.idempotencyWindowMs) {
    // The same key for another request: answering the first result would lose this one silently.
    const asked = command.metadata.requestHash;
    if (asked !== undefined && previous.requestHash !== undefined && asked !== previous.requestHash) {
      fail('MEM_IDEMPOTENCY_MISMATCH', 'this Idempotency-Key was used for another request within its window; send this request with a new key');
    }
    return { events: [], result: previous.result };
  }
  switch (command.type) {
    case 'WriteMemory':
      return decideWrite(command, state, ctx);
    case 'PromoteMemory':
      return decidePromote(command, state);
    case 'RejectQuarantined':
      return decideReject(command, state);
    case 'ExpireMemory':
      return decideExpire(command, state);
    case 'RevokeMemory':
    case 'DeleteMemory':
      return decideRevocation(command, state);
    case 'ForgetSubject':
      return decideForget(command, state);
    case 'TombstoneMemory':
      return decideTombstone(command, state);
    case 'PurgeMemory':
      return decidePurge(command, state);
    default: {
      const never: never = command;
      throw new Error(`unhandled command ${JSON.stringify(never)}`);
    }
  }
}

/**
 * An event's metadata: its command's, with an id of its own. Only the event that answers the
 * command (index 0, the one evolve remembers under the idempotency key) keeps the request's
 * fingerprint. A follow-up (the record a correction supersedes) has no envelope to seal it in,
 * and the fingerprint of a write hashes its content: a plain hash of content is content (§8.5).
 */
function eventMeta(command: MemoryCommand, index: number) {
  const { requestHash, ...metadata } = command.metadata;
  return { ...metadata, ...(index === 0 && requestHash !== undefined ? { requestHash } : {}), eventId: `${command.metadata.commandId}:${index}` };
}

function samePurposes(a: string[], b: string[]): boolean {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

function requireRecord(state: SubjectState, id: string): RecordState {
  const r = state.records[id];
  if (!r || r.meta.status === 'purged') return fail('MEM_NOT_FOUND', 'no such memory');
  return r;
}

function requireVersion(r: RecordState, expected: number): void {
  if (r.meta.version !== expected) {
    fail('MEM_CONFLICT', `expectedVersion ${expected} does not match the current version`);
  }
}

/** A model can never promote or reject its own memory (§3). */
function requireReviewer(r: RecordState, m: MessageMetadata): void {
  if (m.actor.agentId === r.meta.agentId || m.actor.principalId === r.meta.agentId) {
    fail('MEM_SELF_PROMOTION', 'the writer agent cannot review its own memory');
  }
}

/** Whether the command's actor is the record's writer: its agent, acting for its owner principal. */
const isWriter = (r: RecordState, m: MessageMetadata): boolean =>
  r.meta.agentId === m.actor.agentId && r.meta.owner.principalId === m.actor.principalId;

const isDue = (meta: RecordMeta, now: string): boolean => Date.parse(now) >= Date.parse(meta.expiresAt);

function decideWrite(command: CommandOf<'WriteMemory'>, state: SubjectState, ctx: DecideContext): Decision {
  const { data, metadata: m } = command;
  const existing = state.records[data.id];
  // Deleted ids are never reused (§5.9), and say so in the edge's one answer for an id a writer
  // may not use (§5.10): a distinct code would tell anyone what became of the record.
  if (existing && isRetired(existing.meta.status)) fail('MEM_ID_TAKEN', 'this id is not available to this writer');
  if (data.expectedVersion !== (existing?.meta.version ?? 0)) {
    fail('MEM_CONFLICT', `expectedVersion ${data.expectedVersion} does not match the current version`);
  }
  if (data.trust === 'verified') fail('MEM_VALIDATION', 'trust "verified" is granted by promotion only');
  if (existing) {
    // The writer is (principal, agent): the same agent id acting for another principal is someone else (§3).
    if (!isWriter(existing, m)) fail('MEM_FORBIDDEN', 'only the writer (its principal and agent) may update a memory');
    if (existing.meta.status !== 'active' && existing.meta.status !== 'quarantined') {
      fail('MEM_INVALID_TRANSITION', `a ${existing.meta.status} memory cannot be updated`);
    }
    if (existing.meta.resource.kind !== data.resource.kind || existing.meta.resource.id !== data.resource.id) {
      fail('MEM_INVALID_TRANSITION', 'the resource of a memory cannot change; write a new memory');
    }
    if (isWidening(existing.meta.visibility, data.visibility)) {
      fail('MEM_FORBIDDEN', 'widening visibility needs a reviewed promotion');
    }
    if (data.supersedesId) fail('MEM_VALIDATION', 'an update cannot supersede another memory');
  }
  const target = data.supersedesId === undefined ? undefined : checkSupersedeTarget(command, state);

  const status = data.trust === 'untrusted' ? 'quarantined' : 'active';
  const version = (existing?.meta.version ?? 0) + 1;
  const supersedesId = data.supersedesId ?? existing?.meta.supersedesId;
  const record = {
    id: data.id,
    tenantId: m.tenantId,
    agentId: m.actor.agentId,
    subjectId: m.subjectId,
    owner: data.owner,
    resource: data.resource,
    visibility: data.visibility,
    sensitivity: data.sensitivity,
    purposes: [...new Set(data.purposes)].sort(),
    kind: data.kind,
    content: data.content,
    contentHash: data.contentHash,
    provenance: data.provenance,
    trust: data.trust,
    confidence: data.confidence,
    createdAt: existing?.meta.createdAt ?? m.now,
    expiresAt: resolveExpiry(data.kind, m.now, data.expiresAt, ctx.ttl, existing?.meta.createdAt),
    version,
    status,
    // An update keeps what the record was bound to: its pending supersession and legal hold.
    ...(supersedesId === undefined ? {} : { supersedesId }),
    ...(existing?.meta.legalHold === undefined ? {} : { legalHold: existing.meta.legalHold }),
    policyRevision: m.policyRevision,
  } as const;
  const keyGeneration = state.keyGeneration ?? 1;
  const events: MemoryEvent[] = [
    {
      type: 'MemoryWritten',
      data: { record, ...(keyGeneration > 1 ? { keyGeneration } : {}), ...(data.embedding === undefined ? {} : { embedding: data.embedding }) },
      metadata: eventMeta(command, 0),
    },
  ];
  // An untrusted correction must not knock out a trusted fact: it supersedes on promotion.
  if (target && status === 'active') {
    events.push({
      type: 'MemorySuperseded',
      data: { id: target.meta.id, version: target.meta.version + 1, supersededById: data.id },
      metadata: eventMeta(command, 1),
    });
  }
  return { events, result: { id: data.id, version, status } };
}

function checkSupersedeTarget(command: CommandOf<'WriteMemory'>, state: SubjectState): RecordState {
  const { data, metadata: m } = command;
  if (data.supersedesId === data.id) fail('MEM_VALIDATION', 'a memory cannot supersede itself');
  const target = state.records[data.supersedesId ?? ''];
  if (!target || isRetired(target.meta.status)) return fail('MEM_NOT_FOUND', 'the superseded memory does not exist');
  if (!isWriter(target, m) || !samePurposes(target.meta.purposes, data.purposes)) {
    fail('MEM_SUPERSEDE_MISMATCH', 'a correction must come from the same writer (principal and agent) with the same purposes');
  }
  if (target.meta.status !== 'active' || isDue(target.meta, m.now)) {
    fail('MEM_INVALID_TRANSITION', 'only an active memory can be superseded');
  }
  return target;
}

function decidePromote(command: CommandOf<'PromoteMemory'>, state: SubjectState): Decision {
  const { data, metadata: m } = command;
  const r = requireRecord(state, data.id);
  if (isRetired(r.meta.status)) fail('MEM_NOT_FOUND', 'no such memory');
  requireVersion(r, data.expectedVersion);
  requireReviewer(r, m);
  if (isDue(r.meta, m.now)) fail('MEM_INVALID_TRANSITION', 'the memory has expired');
  const visibility: Visibility = data.visibility ?? r.meta.visibility;
  if (r.meta.status === 'active') {
    if (!isWidening(r.meta.visibility, visibility)) {
      fail('MEM_INVALID_TRANSITION', 'an active memory is promoted only to widen its visibility');
    }
  } else if (r.meta.status !== 'quarantined') {
    fail('MEM_INVALID_TRANSITION', `a ${r.meta.status} memory cannot be promoted`);
  }
  const version = r.meta.version + 1;
  const record: RecordMeta = { ...r.meta, status: 'active', trust: 'verified', visibility, version };
  const events: MemoryEvent[] = [
    {
      type: 'MemoryPromoted',
      data: {
        id: data.id, version, visibility, trust: 'verified', record,
        ...(r.pendingContent === undefined ? {} : { content: r.pendingContent }),
      },
      metadata: eventMeta(command, 0),
    },
  ];
  const target = r.meta.supersedesId === undefined ? undefined : state.records[r.meta.supersedesId];
  if (r.meta.status === 'quarantined' && target && target.meta.status === 'active') {
    events.push({
      type: 'MemorySuperseded',
      data: { id: target.meta.id, version: target.meta.version + 1, supersededById: data.id },
      metadata: eventMeta(command, 1),
    });
  }
  return { events, result: { id: data.id, version, status: 'active' } };
}

function decideReject(command: CommandOf<'RejectQuarantined'>, state: SubjectState): Decision {
  const { data, metadata: m } = command;
  const r = requireRecord(state, data.id);
  if (r.meta.status !== 'quarantined') fail('MEM_INVALID_TRANSITION', 'only a quarantined memory can be rejected');
  requireVersion(r, data.expectedVersion);
  requireReviewer(r, m);
  const version = r.meta.version + 1;
  return {
    events: [{
      type: 'MemoryTombstoned',
      data: { id: data.id, version, reason: 'rejected', ...(data.reason === undefined ? {} : { rejectionReason: data.reason }) },
      metadata: eventMeta(command, 0),
    }],
    result: { id: data.id, version, status: 'tombstoned' },
  };
}

/** Expiry comes from a schedule that may be stale: anything not live is a quiet no-op. */
function decideExpire(command: CommandOf<'ExpireMemory'>, state: SubjectState): Decision {
  const r = state.records[command.data.id];
  if (!r) return fail('MEM_NOT_FOUND', 'no such memory');
  const unchanged = { events: [], result: { id: r.meta.id, version: r.meta.version, status: r.meta.status } };
  if (r.meta.status !== 'active' && r.meta.status !== 'quarantined') return unchanged;
  if (!isDue(r.meta, command.metadata.now)) fail('MEM_INVALID_TRANSITION', 'the memory is not due to expire');
  const version = r.meta.version + 1;
  return {
    events: [{ type: 'MemoryExpired', data: { id: r.meta.id, version }, metadata: eventMeta(command, 0) }],
    result: { id: r.meta.id, version, status: 'expired' },
  };
}


function decideRevocation(command: CommandOf<'RevokeMemory' | 'DeleteMemory'>, state: SubjectState): Decision {
  const { data } = command;
  const r = requireRecord(state, data.id);
  if (command.type === 'DeleteMemory' && isRetained(r.meta.status) && !r.meta.legalHold) {
    // Deletion overrides an earlier revocation's audit retention (but never a legal hold).
    const version = r.meta.version + 1;
    return {
      events: [
        {
          type: 'MemoryRevocationRequested',
          data: { id: data.id, version, jobId: data.jobId, mode: 'delete', alreadyTombstoned: true, ...copiesOf(command, r, state) },
          metadata: eventMeta(command, 0),
        },
      ],
      result: { id: data.id, version, status: 'tombstoned', jobId: data.jobId },
    };
  }
  if (command.type === 'DeleteMemory' && r.meta.status === 'revocation_pending' && r.deletion?.reason === 'revoked') {
    // Answering with the revocation's job would let a deletion end as "retained": say so instead.
    throw new GovernedMemoryError('MEM_CONFLICT', 'a revocation of this memory is in progress; retry the deletion once it completes', { retriable: true });
  }
  if (!isLive(r.meta.status)) {
    // Already owned by a deletion job: report that job, change nothing.
    return { events: [], result: { id: r.meta.id, version: r.meta.version, status: r.meta.status, jobId: r.deletion?.jobId ?? data.jobId } };
  }
  const version = r.meta.version + 1;
  const mode = command.type === 'RevokeMemory' ? 'revoke' : 'delete';
  return {
    events: [
      {
        type: 'MemoryRevocationRequested',
        data: { id: data.id, version, jobId: data.jobId, mode, ...(command.type === 'DeleteMemory' ? copiesOf(command, r, state) : {}) },
        metadata: eventMeta(command, 0),
      },
    ],
    result: { id: data.id, version, status: 'revocation_pending', jobId: data.jobId },
  };
}

/** Whether two records hold the same content by their hashes; a hash a reader could not open (erased) matches nothing. */
const sameContent = (a: RecordMeta, b: RecordMeta): boolean => a.contentHash === b.contentHash && a.contentHash !== ERASED_CONTENT_HASH;

/**
 * The copies a `scope=content` deletion takes along: each named record that is still live and
 * still holds the deleted record's content. One rewritten or deleted since the edge looked is
 * left alone (the verification reports it as residual if it holds the content again).
 */
function copiesOf(command: CommandOf<'DeleteMemory'>, r: RecordState, state: SubjectState): { copies?: Array<{ id: string; version: number }> } {
  const copies = [...new Set(command.data.copies ?? [])]
    .map((id) => state.records[id])
    .filter((c): c is RecordState => c !== undefined && c.meta.id !== r.meta.id && isLive(c.meta.status) && sameContent(c.meta, r.meta))
    .map((c) => ({ id: c.meta.id, version: c.meta.version + 1 }));
  return copies.length > 0 ? { copies } : {};
}

/**
 * One event for the subject, whatever it holds — even nothing (no existence oracle). It takes
 * only what the requester may delete (§8.1): the records in the partitions the edge's policy
 * decision point opened to it, or every record of the subject for a privacy officer. Revoked
 * records whose content was retained for audit are forgotten too: the right to be forgotten
 * overrides audit retention, not a legal hold.
 */
function decideForget(command: CommandOf<'ForgetSubject'>, state: SubjectState): Decision {
  const { within } = command.data;
  const partitions = within.kind === 'partitions' ? new Set(within.partitions) : undefined;
  const records = Object.values(state.records)
    .filter((r) => partitions === undefined || partitions.has(recordPartition(r.meta)))
    .filter((r) => isLive(r.meta.status) || (isRetained(r.meta.status) && !r.meta.legalHold))
    .map((r) => ({ id: r.meta.id, version: r.meta.version + 1, ...(isRetained(r.meta.status) ? { alreadyTombstoned: true as const } : {}) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    events: [
      {
        type: 'SubjectForgotten',
        data: { jobId: command.data.jobId, records, keyGeneration: state.keyGeneration ?? 1 },
        metadata: eventMeta(command, 0),
      },
    ],
    result: { jobId: command.data.jobId },
  };
}

function decideTombstone(command: CommandOf<'TombstoneMemory'>, state: SubjectState): Decision {
  const r = requireRecord(state, command.data.id);
  if (r.meta.status === 'tombstoned') return { events: [], result: { id: r.meta.id, version: r.meta.version, status: 'tombstoned' } };
  if (r.meta.status !== 'revocation_pending' || !r.deletion) {
    fail('MEM_INVALID_TRANSITION', 'only a memory pending revocation can be tombstoned');
  }
  const version = r.meta.version + 1;
  return {
    events: [
      {
        type: 'MemoryTombstoned',
        data: { id: r.meta.id, version, jobId: command.data.jobId, reason: r.deletion?.reason ?? 'deleted' },
        metadata: eventMeta(command, 0),
      },
    ],
    result: { id: r.meta.id, version, status: 'tombstoned' },
  };
}

function decidePurge(command: CommandOf<'PurgeMemory'>, state: SubjectState): Decision {
  const r = state.records[command.data.id];
  if (!r) return fail('MEM_NOT_FOUND', 'no such memory');
  if (r.meta.status === 'purged') return { events: [], result: { id: r.meta.id, version: r.meta.version, status: 'purged' } };
  if (r.meta.status !== 'tombstoned') fail('MEM_INVALID_TRANSITION', 'only a tombstoned memory can be purged');
  if (r.meta.legalHold) fail('MEM_INVALID_TRANSITION', 'the memory is under legal hold');
  if (r.deletion?.reason === 'revoked') fail('MEM_INVALID_TRANSITION', 'a revoked memory is retained for audit');
  const version = r.meta.version + 1;
  return {
    events: [{ type: 'MemoryPurged', data: { id: r.meta.id, version, jobId: command.data.jobId }, metadata: eventMeta(command, 0) }],
    result: { id: r.meta.id, version, status: 'purged' },
  };
}
