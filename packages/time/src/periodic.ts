import type { ServiceHandle } from '@gm/contracts';
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
