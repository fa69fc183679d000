import { z } from 'zod';
import { DeletionEvidence, DeletionTarget } from './api.ts';
import { Id, IsoTime } from './primitives.ts';

/** One task per target of a job (deletion.tasks), keyed by jobId. */
export const DeletionTask = z
  .object({
    jobId: Id,
    tenantId: Id,
    target: z.union([DeletionTarget, z.literal('verification')]),
    recordIds: z.array(Id),
    /** revoke keeps the primary content for audit; delete and forget remove it. */
    retainPrimary: z.boolean(),
    issuedAt: IsoTime,
  })
  .strict();
export type DeletionTask = z.infer<typeof DeletionTask>;

/** One ack per task (deletion.acks) with evidence: counts and hashes, never content. */
export const DeletionAck = z
  .object({
    jobId: Id,
    tenantId: Id,
    target: z.union([DeletionTarget, z.literal('verification')]),
    evidence: DeletionEvidence,
    /** For verification: the probes that still found something (empty when clean). */
    findings: z.array(z.string()).optional(),
  })
  .strict();
export type DeletionAck = z.infer<typeof DeletionAck>;
