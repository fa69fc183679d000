import { DistributedEnv, WithRedis, duration, meteredBus, openSealedBus, openState, runService, systemClock } from '@gm/service-kit';
import { startExpiryScheduler } from './scheduler.ts';

/** expiry-scheduler as its own process: the schedule in a Redis sorted set, ExpireMemory when due. */
const Env = DistributedEnv.extend({ ...WithRedis.shape, MEMORY_EXPIRY_TICK: duration('1s', true) });

await runService('expiry-scheduler', Env, async ({ env, log, metrics }) => {
  // Metadata only: this service holds no key and sees no content.
  const sealed = await openSealedBus(env, 'expiry-scheduler', 'redact');
  // Consumer lag of every group this process runs, on /metrics.
  const bus = meteredBus(sealed.bus, metrics);
  const state = openState(env);
  const service = await startExpiryScheduler({ bus, state, clock: systemClock, log, tickMs: env.MEMORY_EXPIRY_TICK });
  return {
    handle: { close: async () => { await service.close(); await sealed.close(); await state.kv.close(); } },
    ready: () => state.kv.ping(),
  };
});
