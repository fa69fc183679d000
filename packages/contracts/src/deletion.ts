import { z } from 'zod';
import { DeletionEvidence, DeletionResidual, DeletionTarget } from './api.ts';
import { Id, IsoTime } from './primitives.ts';

/** One task per target of a job (deletion.tasks), keyed by jobId. */
export const DeletionTask = z
  .object({
    jobId: Id,
    tenantId: Id,
    /**
     * A copy to remove (DeletionTarget); `verification`: replay the probes; `receipt`: the job
     * is finished (verified or failed) — sign and publish its receipt (receipt-verifier).
     */
    target: z.union([DeletionTarget, z.literal('verification'), z.literal('receipt')]),
    recordIds: z.array(Id),
    /** revoke keeps the primary content for audit, and so does any job under legal hold; delete and forget remove it. */
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
    target: z.union([DeletionTarget, z.literal('verification'), z.literal('receipt')]),
    evidence: DeletionEvidence,
    /** For verification: the probes that still found something (empty when clean). */
    findings: z.array(z.string()).optional(),
    /** For verification: identical content in other live records of the subject, which does not fail the job. */
    residual: z.array(DeletionResidual).optional(),
  })
  .strict();
export type DeletionAck = z.infer<typeof DeletionAck>;
