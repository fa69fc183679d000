import type { DeletionAck, DeletionTask } from './deletion.ts';
import type { Clock } from './runtime.ts';
import { TOPICS } from './topics.ts';

/**
 * The deletion-ack protocol (design §8): each target of a job answers its task with one ack on
 * deletion.acks, keyed by the job, whose evidence is what is left, read back, not what was hoped.
 */
export function deletionAck(
  task: DeletionTask, verifier: string, clock: Clock,
  outcome: { ok: boolean; ref: string; findings?: string[]; residual?: DeletionAck['residual'] },
): { topic: string; key: string; value: DeletionAck } {
  const value: DeletionAck = {
    jobId: task.jobId,
    tenantId: task.tenantId,
    target: task.target,
    evidence: {
      target: task.target,
      status: outcome.ok ? 'done' : 'failed',
      completedAt: clock.now().toISOString(),
      verifier,
      ref: outcome.ref,
    },
    ...(outcome.findings === undefined ? {} : { findings: outcome.findings }),
    ...(outcome.residual === undefined ? {} : { residual: outcome.residual }),
  };
  return { topic: TOPICS.deletionAcks, key: task.jobId, value };
}

/** A store of copies a removal target empties: what it removed, and whether it still holds a record. */
export interface RemovableCopies {
  remove(tenantId: string, recordIds: string[]): Promise<number>;
  holds(tenantId: string, recordId: string): Promise<boolean>;
}

/**
 * A removal target's work for one task: removes the task's records from a store of copies, then
 * reads each back by id, so the ack's evidence is what is still there (`removed=2;remaining=0`).
 */
export async function removalAck(
  task: DeletionTask, verifier: string, clock: Clock, store: RemovableCopies,
): Promise<ReturnType<typeof deletionAck>> {
  const removed = await store.remove(task.tenantId, task.recordIds);
  let remaining = 0;
  for (const id of task.recordIds) if (await store.holds(task.tenantId, id)) remaining += 1;
  return deletionAck(task, verifier, clock, { ok: remaining === 0, ref: `removed=${removed};remaining=${remaining}` });
}
