/**
 * Builders for the memory decider's specifications. Every command is parsed with its zod
 * schema, so a fixture can never drift from the contract; `history` runs commands through
 * `decide` + `evolve`, so a spec's `given` events are the ones the decider really emits.
 * Time is always an argument: the decider reads no clock, and neither do its fixtures.
 */
import {
  DeleteMemory, ExpireMemory, ForgetSubject, PromoteMemory, PurgeMemory, RejectQuarantined, RevokeMemory,
  TombstoneMemory, WriteMemory,
  type Actor, type CommandOf, type ForgetWithin, type MemoryCommand, type MemoryEvent, type MessageMetadata, type RejectionReason,
  type Visibility,
  type WriteMemoryData,
} from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '../ttl.ts';
import { decide, type DecideContext } from './decide.ts';
import { fold } from './evolve.ts';
import { initialState, type SubjectState } from './state.ts';

export const SECOND = 1_000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export const T0 = '2025-03-01T09:00:00.000Z';
/** `base` moved by `ms` milliseconds, as an ISO string. */
export const after = (base: string, ms: number): string => new Date(Date.parse(base) + ms).toISOString();

export const TENANT = 'tenant-acme';
export const SUBJECT = 'subject-ada';
export const CONTENT = 'Ada prefers email over phone calls.';
export const CONTENT_HASH = 'ab'.repeat(32);

/** The agent that writes memories, acting for person-ana. */
export const WRITER: Actor = {
  agentId: 'agent-notes', principalId: 'person-ana', principalKind: 'person', runId: 'run-1', purpose: 'support',
};
/** A second agent of the same person: still not the writer agent. */
export const OTHER_AGENT: Actor = { ...WRITER, agentId: 'agent-helper', runId: 'run-2' };
/** A human reviewer using a review agent. */
export const REVIEWER: Actor = {
  agentId: 'agent-review', principalId: 'person-rita', principalKind: 'person', runId: 'run-9', purpose: 'support',
};
/** The services that send internal commands (expiry-scheduler, deletion-orchestrator). */
export const SYSTEM: Actor = {
  agentId: 'svc-lifecycle', principalId: 'svc-lifecycle', principalKind: 'service', runId: 'run-sys', purpose: 'support',
};
/** A compliance officer asking for deletion. */
export const COMPLIANCE: Actor = {
  agentId: 'agent-compliance', principalId: 'person-carl', principalKind: 'person', runId: 'run-c', purpose: 'support',
};

export const IDEMPOTENCY_WINDOW_MS = DAY;
export const CTX: DecideContext = { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: IDEMPOTENCY_WINDOW_MS };

export type MetaOverrides = Partial<Omit<MessageMetadata, 'now'>>;

// Command ids only need to be unique: a repeated one is an idempotent retry (§5.6).
let sequence = 0;
const metadata = (now: string, actor: Actor, overrides: MetaOverrides): MessageMetadata => ({
  commandId: `cmd-${++sequence}`,
  tenantId: TENANT,
  subjectId: SUBJECT,
  actor,
  now,
  policyRevision: 3,
  ...overrides,
});

export const writeData = (overrides: Partial<WriteMemoryData> = {}): WriteMemoryData => ({
  id: 'mem-1',
  expectedVersion: 0,
  owner: { principalId: WRITER.principalId, kind: 'person' },
  resource: { kind: 'project', id: 'apollo' },
  visibility: 'private',
  sensitivity: 'normal',
  purposes: ['support'],
  kind: 'fact',
  content: CONTENT,
  contentHash: CONTENT_HASH,
  provenance: [{ source: 'user', observedAt: T0 }],
  trust: 'trusted',
  confidence: 0.8,
  ...overrides,
});

export const write = (now: string, data: Partial<WriteMemoryData> = {}, meta: MetaOverrides = {}): CommandOf<'WriteMemory'> =>
  WriteMemory.parse({ type: 'WriteMemory', data: writeData(data), metadata: metadata(now, WRITER, meta) });

export const promote = (
  now: string,
  data: { id?: string; expectedVersion: number; visibility?: Visibility },
  meta: MetaOverrides = {},
): CommandOf<'PromoteMemory'> =>
  PromoteMemory.parse({ type: 'PromoteMemory', data: { id: 'mem-1', ...data }, metadata: metadata(now, REVIEWER, meta) });

export const reject = (
  now: string,
  data: { id?: string; expectedVersion: number; reason?: RejectionReason },
  meta: MetaOverrides = {},
): CommandOf<'RejectQuarantined'> =>
  RejectQuarantined.parse({ type: 'RejectQuarantined', data: { id: 'mem-1', ...data }, metadata: metadata(now, REVIEWER, meta) });

export const expire = (now: string, data: { id?: string } = {}, meta: MetaOverrides = {}): CommandOf<'ExpireMemory'> =>
  ExpireMemory.parse({ type: 'ExpireMemory', data: { id: 'mem-1', ...data }, metadata: metadata(now, SYSTEM, meta) });

type ByIdJob = { id?: string; jobId?: string };

export const revoke = (now: string, data: ByIdJob = {}, meta: MetaOverrides = {}): CommandOf<'RevokeMemory'> =>
  RevokeMemory.parse({ type: 'RevokeMemory', data: { id: 'mem-1', jobId: 'job-1', ...data }, metadata: metadata(now, COMPLIANCE, meta) });

export const deleteMemory = (now: string, data: ByIdJob = {}, meta: MetaOverrides = {}): CommandOf<'DeleteMemory'> =>
  DeleteMemory.parse({ type: 'DeleteMemory', data: { id: 'mem-1', jobId: 'job-1', ...data }, metadata: metadata(now, COMPLIANCE, meta) });

export const forget = (now: string, data: { jobId?: string; within?: ForgetWithin } = {}, meta: MetaOverrides = {}): CommandOf<'ForgetSubject'> =>
  ForgetSubject.parse({ type: 'ForgetSubject', data: { jobId: 'job-forget', within: { kind: 'tenant' }, ...data }, metadata: metadata(now, COMPLIANCE, meta) });

export const tombstone = (now: string, data: ByIdJob = {}, meta: MetaOverrides = {}): CommandOf<'TombstoneMemory'> =>
  TombstoneMemory.parse({ type: 'TombstoneMemory', data: { id: 'mem-1', jobId: 'job-1', ...data }, metadata: metadata(now, SYSTEM, meta) });

export const purge = (now: string, data: ByIdJob = {}, meta: MetaOverrides = {}): CommandOf<'PurgeMemory'> =>
  PurgeMemory.parse({ type: 'PurgeMemory', data: { id: 'mem-1', jobId: 'job-1', ...data }, metadata: metadata(now, SYSTEM, meta) });

/**
 * The events the decider emits for `commands`, each decided against the state the previous
 * ones produced. A command the decider rejects throws here, so a broken `given` fails loudly.
 */
export function history(commands: MemoryCommand[], ctx: DecideContext = CTX, from: SubjectState = initialState()): MemoryEvent[] {
  const events: MemoryEvent[] = [];
  let state = from;
  for (const command of commands) {
    const decision = decide(command, state, ctx);
    events.push(...decision.events);
    state = fold(decision.events, state);
  }
  return events;
}

export const stateOf = (events: MemoryEvent[]): SubjectState => fold(events, initialState());
