export * from './run-service.ts';
import type { BatchHandler, Bus, ConsumedMessage, MessageHandler, ProcessContext, SubscriptionSettings } from '@gm/bus';
import {
  MemoryEvent, TOPICS, readMemoryEvent,
  type Clock, type DeletionAck, type DeletionTask, type ServiceHandle,
} from '@gm/contracts';
import type { Logger } from '@gm/observability';

/**
 * Runs `work` every `intervalMs`, never overlapping itself; errors are logged, not thrown, so
 * one bad tick never stops the loop. close() waits for a tick in flight.
 */
export function periodic(intervalMs: number, work: () => Promise<void>, log: Logger, what: string): ServiceHandle {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = work()
      .catch((err: unknown) => log.error({ err }, `${what} failed`))
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  timer.unref();
  return {
    close: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * Subscribes a group to memory.events with a typed handler. A message that is not a memory
 * event throws, so the bus retries it and then dead-letters it with its provenance.
 */
export async function subscribeToMemoryEvents(
  bus: Bus, groupId: string, handle: (event: MemoryEvent, message: ConsumedMessage, ctx: ProcessContext) => Promise<void>,
  settings: Pick<SubscriptionSettings, 'lingerMs' | 'lingerShare' | 'maxBatchMessages'> = {},
): Promise<ServiceHandle> {
  const handler: MessageHandler = async (message, ctx) => {
    await handle(readMemoryEvent(message), message, ctx);
  };
  const sub = await bus.subscribe({ groupId, topics: [TOPICS.events], handler, ...settings });
  return { close: () => sub.close() };
}

/** One memory event of a batch, with the message that carried it. */
export interface EventInBatch {
  event: MemoryEvent;
  message: ConsumedMessage;
}

/**
 * Like `subscribeToMemoryEvents`, with a partition's batch of events at once (the bus's batch
 * handler): for work that is cheaper once per batch than once per event. A message that is not
 * a memory event fails the batch; the bus splits it until that message is dead-lettered alone.
 */
export async function subscribeToMemoryEventBatches(
  bus: Bus, groupId: string, handle: (events: readonly EventInBatch[], ctx: ProcessContext) => Promise<void>,
  settings: Pick<SubscriptionSettings, 'lingerMs' | 'lingerShare' | 'maxBatchMessages'> = {},
): Promise<ServiceHandle> {
  const batchHandler: BatchHandler = async (messages, ctx) => {
    const events = messages.map((message) => ({ event: readMemoryEvent(message), message }));
    await handle(events, ctx);
  };
  const sub = await bus.subscribe({ groupId, topics: [TOPICS.events], batchHandler, ...settings });
  return { close: () => sub.close() };
}

/** The ack a target worker sends for a deletion task: what is left, read back, not what was hoped. */
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

/**
 * A removal target's work for one task: removes the task's records from a store of copies, then
 * reads each back by id, so the ack's evidence is what is still there (`removed=2;remaining=0`).
 */
export async function removalAck(
  task: DeletionTask, verifier: string, clock: Clock,
  store: { remove(tenantId: string, recordIds: string[]): Promise<number>; holds(tenantId: string, recordId: string): Promise<boolean> },
): Promise<ReturnType<typeof deletionAck>> {
  const removed = await store.remove(task.tenantId, task.recordIds);
  let remaining = 0;
  for (const id of task.recordIds) if (await store.holds(task.tenantId, id)) remaining += 1;
  return deletionAck(task, verifier, clock, { ok: remaining === 0, ref: `removed=${removed};remaining=${remaining}` });
}
export * from './env.ts';
export * from './distributed.ts';
export * from './policy-set.ts';
export * from './clocks.ts';
export * from './metered-bus.ts';
export * from './env-reference.ts';
