import { DistributedEnv, WithElasticsearch, WithRedis, openBus, openIndex, openState, runService, systemClock } from '@gm/service-kit';
import { startIndexBuilder } from './index-builder.ts';
import { startIndexTargets } from './index-targets.ts';

/** index-builder as its own process: active records ⇒ Elasticsearch, everything else removed. */
const Env = DistributedEnv.extend({ ...WithElasticsearch.shape, ...WithRedis.shape });

await runService('index-builder', Env, async ({ env }) => {
  const bus = await openBus(env, 'index-builder');
  const index = openIndex(env);
  const state = openState(env);
  const builder = await startIndexBuilder({ bus, index, state });
  const targets = await startIndexTargets({ bus, index, clock: systemClock });
  return {
    handle: { close: async () => { await targets.close(); await builder.close(); await bus.close(); await index.close(); await state.kv.close(); } },
    ready: async () => (await index.count().then(() => true).catch(() => false)),
  };
});
