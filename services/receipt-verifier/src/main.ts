import { DistributedEnv, WithElasticsearch, WithRedis, openBus, openIndex, openState, runService, systemClock } from '@gm/service-kit';
import { startReceiptVerifier } from './verifier.ts';

/** receipt-verifier as its own process: probes every copy before a job may be verified. */
const Env = DistributedEnv.extend({ ...WithRedis.shape, ...WithElasticsearch.shape });

await runService('receipt-verifier', Env, async ({ env }) => {
  const bus = await openBus(env, 'receipt-verifier');
  const state = openState(env);
  const index = openIndex(env);
  const service = await startReceiptVerifier({ bus, index, state, clock: systemClock });
  return {
    handle: { close: async () => { await service.close(); await bus.close(); await state.kv.close(); await index.close(); } },
    ready: () => state.kv.ping(),
  };
});
