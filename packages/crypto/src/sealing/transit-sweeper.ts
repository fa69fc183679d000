import { groupLag, type Bus } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import type { Keyring } from '../keyring.ts';
import { sweepTransitKeys } from './transit.ts';

export interface TransitSweeperOptions {
  /** The raw log (offsets only). */
  bus: Bus;
  keyring: Keyring;
  /** The consumer group of memory.commands (write-admission). */
  groupId: string;
  clock: () => number;
  intervalMs?: number;
  graceMs?: number;
  onSwept?: (count: number) => void;
  onError?: (err: unknown) => void;
}

/** Whether `groupId` has committed every message memory.commands holds now. */
export async function consumedAllCommands(bus: Bus, groupId: string): Promise<boolean> {
  return (await groupLag(bus, groupId, TOPICS.commands)).every((lag) => lag === 0);
}

/**
 * Destroys past transit keys every `intervalMs` (default 60 s) once write-admission has consumed
 * what was sent (transit.ts). Runs beside write-admission; several instances may: destruction is
 * idempotent. Returns a stop function.
 */
export function startTransitSweeper(options: TransitSweeperOptions): { close(): Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= sweepTransitKeys({
      keyring: options.keyring, clock: options.clock, consumedAll: () => consumedAllCommands(options.bus, options.groupId),
      ...(options.graceMs === undefined ? {} : { graceMs: options.graceMs }),
    })
      .then((count) => {
        if (count > 0) options.onSwept?.(count);
      })
      .catch((err: unknown) => options.onError?.(err))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, options.intervalMs ?? 60_000);
  timer.unref();
  return {
    close: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
