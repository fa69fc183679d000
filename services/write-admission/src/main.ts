import { DistributedEnv, duration, openBus, runService, ttlPolicyOf, ttlShape } from '@gm/service-kit';
import { startWriteAdmission } from './admission.ts';

/** write-admission as its own process: the single writer of memory.events (design §4). */
const Env = DistributedEnv.extend({ MEMORY_IDEMPOTENCY_WINDOW: duration('24h'), ...ttlShape });

await runService('write-admission', Env, async ({ env, log, metrics }) => {
  const bus = await openBus(env, 'write-admission');
  const service = await startWriteAdmission({
    bus, log, metrics, decide: { ttl: ttlPolicyOf(env), idempotencyWindowMs: env.MEMORY_IDEMPOTENCY_WINDOW },
  });
  return {
    handle: { close: async () => { await service.close(); await bus.close(); } },
    ready: async () => (await bus.endOffsets('memory.events')).length > 0,
  };
});
