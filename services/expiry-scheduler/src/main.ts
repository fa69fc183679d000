import { openSealedBus, openState, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { systemClock } from '@gm/time';
import { ExpirySchedulerEnv } from './env.ts';
import { startExpiryScheduler } from './scheduler.ts';

/** expiry-scheduler as its own process: the schedule in a Redis sorted set, ExpireMemory when due. */
await runService('expiry-scheduler', ExpirySchedulerEnv, async ({ env, log, metrics }) => {
  // Metadata only: this service holds no key and sees no content.
  const sealed = await openSealedBus(env, 'expiry-scheduler', 'redact');
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  const state = openState(env);
  const service = await startExpiryScheduler({ bus, state, clock: systemClock, log, tickMs: env.MEMORY_EXPIRY_TICK });
  return {
    handle: { close: async () => { await service.close(); await sealed.close(); await state.kv.close(); } },
    ready: () => state.kv.ping(),
  };
});
