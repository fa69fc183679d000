import { openIndex, openSealedBus, openState, openSummaries, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { systemClock } from '@gm/time';
import { IndexBuilderEnv } from './env.ts';
import { startIndexBuilder, startSummaryBuilder } from './index-builder.ts';
import { startIndexTargets } from './index-targets.ts';

/** index-builder as its own process: active records ⇒ Elasticsearch, everything else removed; summaries kept in step. */
await runService('index-builder', IndexBuilderEnv, async ({ env, log, metrics }) => {
  const sealed = await openSealedBus(env, 'index-builder', 'open', { onError: (err) => log.warn({ err }, 'key store poll failed') });
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  // The projection's writes become visible at the next periodic refresh, shared by every write
  // of that interval, and its commit follows them (design §9: read-your-writes waits for the
  // commit); the deletion targets' at once (their acks say what is gone, §8.3).
  const index = openIndex(env);
  const projectedIndex = openIndex(env, { refresh: 'wait_for' });
  // The summary-builder's writes become visible at the next periodic refresh (summaries follow
  // writes eventually, design §6.8); the summary deletion target's at once (the replays follow).
  const summaries = openSummaries(env);
  const eventualSummaries = openSummaries(env, { refresh: 'wait_for' });
  const state = openState(env);
  const builder = await startIndexBuilder({ bus, index: projectedIndex, state });
  const summaryBuilder = await startSummaryBuilder({ bus, index, state, summaries: eventualSummaries });
  const targets = await startIndexTargets({ bus, index, clock: systemClock, summaries: { store: summaries, state } });
  return {
    handle: { close: async () => { await targets.close(); await summaryBuilder.close(); await builder.close(); await sealed.close(); await index.close(); await projectedIndex.close(); await summaries.close(); await eventualSummaries.close(); await state.kv.close(); } },
    ready: async () => (await index.count().then(() => true).catch(() => false)),
  };
});
