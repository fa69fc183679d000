import { SENDS_NOTHING, subscribeToMemoryEventBatches, type Bus } from '@gm/bus';
import { periodic } from '@gm/time';
import {
  CONSUMER_GROUPS, TOPICS, serviceActor, subjectKey,
  type Clock, type CommandOf, type MemoryEvent, type ServiceHandle,
} from '@gm/contracts';
import { endedRecordIds } from '@gm/domain';
import { derivedId, keyOf } from '@gm/ids';
import type { Logger } from '@gm/observability';
import type { KvWrite, ScheduledExpiry, StateStore } from '@gm/state-store';

export const EXPIRY_SCHEDULER_GROUP = CONSUMER_GROUPS.expiryScheduler;

export interface ExpirySchedulerDeps {
  bus: Bus;
  state: StateStore;
  clock: Clock;
  log: Logger;
  tickMs: number;
}

/** The schedule writes of one event: a write schedules its record; an end unschedules the records it ends. */
function scheduleWrites(state: StateStore, event: MemoryEvent): KvWrite[] {
  const { tenantId, subjectId } = event.metadata;
  if (event.type === 'MemoryWritten') {
    const r = event.data.record;
    return [state.expiries.scheduleWrite({ tenantId, subjectId, recordId: r.id, dueAtMs: Date.parse(r.expiresAt) })];
  }
  return endedRecordIds(event).map((recordId) => state.expiries.unscheduleWrite({ tenantId, subjectId, recordId }));
}

/**
 * Keeps the schedule equal to the live records' expiresAt (a Redis sorted set in production),
 * a batch of events in one pipeline, in log order.
 */
export async function scheduleFromEvents(state: StateStore, events: readonly MemoryEvent[]): Promise<void> {
  const writes = events.flatMap((e) => scheduleWrites(state, e));
  if (writes.length > 0) await state.kv.pipeline(writes);
}

/**
 * The schedule may lag the log by this much: the ticker re-reads it every tick anyway. A
 * lingering fetch asks again every linger at rest (it waits for a mebibyte or the linger), so
 * 100 ms made this the busiest idle consumer; a second is the tick's own grain.
 */
const SCHEDULE_LINGER_MS = 1_000;

/**
 * Sends ExpireMemory for due entries. The commandId is derived from the entry, so a re-send
 * (the event has not come back yet) is answered from the idempotency slot and never expires
 * twice. Entries leave the schedule only when MemoryExpired (or another end) is folded, so
 * nothing is lost if a command is dropped.
 */
export async function sendExpiries(bus: Bus, due: ScheduledExpiry[], now: Date): Promise<number> {
  if (due.length === 0) return 0;
  const commands = due.map((d): CommandOf<'ExpireMemory'> => ({
    type: 'ExpireMemory',
    data: { id: d.recordId },
    metadata: {
      commandId: derivedId('expire', d.dueAtMs, d.tenantId, d.recordId),
      tenantId: d.tenantId,
      subjectId: d.subjectId,
      actor: serviceActor('expiry-scheduler'),
      now: now.toISOString(),
      policyRevision: 0,
    },
  }));
  await bus.produce(commands.map((c) => ({ topic: TOPICS.commands, key: subjectKey(c.metadata.tenantId, c.metadata.subjectId), value: c })));
  return commands.length;
}

/** One scheduler tick: due entries not sent within `resendMs` are sent. */
export function createTicker(deps: Pick<ExpirySchedulerDeps, 'bus' | 'state' | 'clock'>, resendMs: number) {
  const sentAt = new Map<string, number>();
  return async (): Promise<number> => {
    const now = deps.clock.now();
    const nowMs = now.getTime();
    const due = (await deps.state.expiries.due(nowMs, 500)).filter((d) => {
      const key = keyOf(d.tenantId, d.recordId, String(d.dueAtMs));
      const last = sentAt.get(key);
      if (last !== undefined && nowMs - last < resendMs) return false;
      sentAt.set(key, nowMs);
      return true;
    });
    if (sentAt.size > 10_000) sentAt.clear();
    return sendExpiries(deps.bus, due, now);
  };
}

export async function startExpiryScheduler(deps: ExpirySchedulerDeps): Promise<ServiceHandle> {
  const sub = await subscribeToMemoryEventBatches(
    deps.bus, EXPIRY_SCHEDULER_GROUP, (batch) => scheduleFromEvents(deps.state, batch.map((b) => b.event)), { ...SENDS_NOTHING, lingerMs: SCHEDULE_LINGER_MS },
  );
  const tick = createTicker(deps, Math.max(5_000, deps.tickMs * 10));
  const timer = periodic(
    deps.tickMs,
    async () => {
      const count = await tick();
      if (count > 0) deps.log.info({ count }, 'expiry commands sent');
    },
    deps.log,
    'expiry tick',
  );
  return {
    close: async () => {
      await timer.close();
      await sub.close();
    },
  };
}
