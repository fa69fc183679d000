import { DistributedEnv, WithRedis, duration, openBus, openState, runService, systemClock } from '@gm/service-kit';
import { startExpiryScheduler } from './scheduler.ts';

/** expiry-scheduler as its own process: the schedule in a Redis sorted set, ExpireMemory when due. */
const Env = DistributedEnv.extend({ ...WithRedis.shape, MEMORY_EXPIRY_TICK: duration('1s', true) });

await runService('expiry-scheduler', Env, async ({ env, log }) => {
  const bus = await openBus(env, 'expiry-scheduler');
  const state = openState(env);
  const service = await startExpiryScheduler({ bus, state, clock: systemClock, log, tickMs: env.MEMORY_EXPIRY_TICK });
  return {
    handle: { close: async () => { await service.close(); await bus.close(); await state.kv.close(); } },
    ready: () => state.kv.ping(),
  };
});
