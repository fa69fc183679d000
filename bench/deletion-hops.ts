/**
 * Where a deletion's time goes (design §8): for each of the phase's jobs, when each message of
 * its fan-out was appended, counted from the job's first task — read back from
 * `deletion.tasks`, `deletion.acks` and `deletion.receipts` once the deletion phase is over.
 * The times are the log's own (Kafka: the producer's create time; SQLite: the append's clock),
 * so the figures need no tracing and cost the measured path nothing.
 *
 * A task sent again (a verification retried, a stalled job resumed) counts from its first send;
 * an ack from its last, the one the job went on with.
 */
import type { Bus, ConsumedMessage } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { summarize, type Summary } from './stats.ts';

export interface DeletionHop {
  /** `task <target>`, `ack <target>` (target: a copy, `verification`, `key` or `receipt`), or `receipt published`. */
  step: string;
  /** Milliseconds from the job's first task. */
  fromFirstTask: Summary;
}

/** The target a task or an ack names, read without trusting the message's shape. */
const targetOf = (message: ConsumedMessage): string | undefined => {
  const target = (message.value as { target?: unknown } | null)?.target;
  return typeof target === 'string' ? target : undefined;
};

/** Each job's step times (epoch ms), keyed by job id (the messages' key on all three topics). */
async function stepTimes(bus: Pick<Bus, 'readAll'>, jobIds: ReadonlySet<string>): Promise<Map<string, Map<string, number>>> {
  const jobs = new Map<string, Map<string, number>>();
  const note = (jobId: string, step: string, at: number, keep: 'first' | 'last') => {
    const steps = jobs.get(jobId) ?? new Map<string, number>();
    jobs.set(jobId, steps);
    const seen = steps.get(step);
    if (seen === undefined || (keep === 'first' ? at < seen : at > seen)) steps.set(step, at);
  };
  const sources = [
    { topic: TOPICS.deletionTasks, step: (m: ConsumedMessage) => `task ${targetOf(m) ?? '?'}`, keep: 'first' as const },
    { topic: TOPICS.deletionAcks, step: (m: ConsumedMessage) => `ack ${targetOf(m) ?? '?'}`, keep: 'last' as const },
    { topic: TOPICS.deletionReceipts, step: () => 'receipt published', keep: 'first' as const },
  ];
  for (const { topic, step, keep } of sources) {
    for await (const message of bus.readAll(topic)) {
      if (!jobIds.has(message.key)) continue;
      note(message.key, step(message), message.timestamp, keep);
      if (topic === TOPICS.deletionTasks) note(message.key, 'first task', message.timestamp, 'first');
    }
  }
  return jobs;
}

/** Per step, the p50/p95 over the jobs that took it, in the order of their p50. */
export async function deletionHops(bus: Pick<Bus, 'readAll'>, jobIds: ReadonlySet<string>): Promise<DeletionHop[]> {
  const bySteps = new Map<string, number[]>();
  for (const steps of (await stepTimes(bus, jobIds)).values()) {
    const start = steps.get('first task');
    if (start === undefined) continue;
    for (const [step, at] of steps) {
      if (step === 'first task') continue;
      const times = bySteps.get(step) ?? [];
      times.push(at - start);
      bySteps.set(step, times);
    }
  }
  return [...bySteps]
    .map(([step, times]) => ({ step, fromFirstTask: summarize(times) }))
    .sort((a, b) => a.fromFirstTask.p50 - b.fromFirstTask.p50);
}
