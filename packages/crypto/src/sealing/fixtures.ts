import type { OutgoingMessage } from '@gm/bus';
import { TOPICS, WriteMemory, subjectKey, type CommandOf, type EventOf } from '@gm/contracts';

/** Shared by the sealing specs: one tenant, one subject (an e-mail: personal data), real message shapes. */
export const TENANT = 't1';
export const SUBJECT = 'alice@example.com';
export const T0 = '2025-03-01T09:00:00.000Z';
export const HASH = 'ab'.repeat(32);
/** The idempotency fingerprint a write carries (it hashes the request body, content included). */
export const FINGERPRINT = 'cd'.repeat(32);
export const ACTOR = { agentId: 'agent-notes', principalId: 'person-ana', principalKind: 'person', runId: 'run-1', purpose: 'support' } as const;

export const commandMetadata = (commandId: string, over: { tenantId?: string; subjectId?: string } = {}) => ({
  commandId, tenantId: over.tenantId ?? TENANT, subjectId: over.subjectId ?? SUBJECT, actor: ACTOR, now: T0, policyRevision: 0,
  idempotencyKey: `key-${commandId}`, requestHash: FINGERPRINT,
});

/** A WriteMemory command on memory.commands, parsed with its contract schema. */
export const writeCommand = (id: string, content: string, over: { tenantId?: string } = {}): OutgoingMessage => ({
  topic: TOPICS.commands,
  key: subjectKey(over.tenantId ?? TENANT, SUBJECT),
  value: WriteMemory.parse({
    type: 'WriteMemory',
    data: {
      id, expectedVersion: 0, owner: { principalId: ACTOR.principalId, kind: 'person' }, resource: { kind: 'project', id: 'apollo' },
      visibility: 'private', sensitivity: 'normal', purposes: ['support'], kind: 'fact', content, contentHash: HASH,
      provenance: [{ source: 'user', observedAt: T0 }], trust: 'trusted', confidence: 0.8,
    },
    metadata: commandMetadata(`cmd-${id}`, over),
  }),
});

export const commandContent = (value: unknown): unknown => (value as CommandOf<'WriteMemory'>).data.content;
export const writtenContent = (value: unknown): unknown => (value as EventOf<'MemoryWritten'>).data.record.content;
