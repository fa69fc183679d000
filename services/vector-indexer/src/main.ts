import { openSealedBus, openState, openVectors, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { loadEmbeddingModel } from '@gm/embedding';
import { systemClock } from '@gm/time';
import { VectorIndexerEnv } from './env.ts';
import { startVectorIndexer } from './vector-indexer.ts';
import { startVectorTargets } from './vector-targets.ts';

/**
 * vector-indexer as its own process (§6.7): active records ⇒ a vector in Elasticsearch,
 * embedded by the local model; everything else removed; and the `vector` deletion target.
 * Scaled like the other consumer groups: each instance embeds the partitions it holds.
 */
await runService('vector-indexer', VectorIndexerEnv, async ({ env, log, metrics }) => {
  if (env.MEMORY_SEMANTIC === 'off') {
    // A stack without vectors runs no indexer; starting one anyway is a configuration error, said plainly.
    throw new Error('MEMORY_SEMANTIC=off: this stack keeps no vectors, so the vector-indexer has nothing to do; do not start it');
  }
  // Background priority: on a busy machine the vectors lag, not the processes writes wait for.
  const model = await loadEmbeddingModel(env.MEMORY_EMBEDDING_MODEL_DIR, { priority: 'background' });
  const sealed = await openSealedBus(env, 'vector-indexer', 'open', { onError: (err) => log.warn({ err }, 'key store poll failed') });
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  // Upserts visible at the next periodic refresh (its lag is allowed; a semantic read with a
  // consistency token waits for this group's commit, then asks for a refresh); removals, the
  // vector deletion target's, at once.
  const vectors = openVectors(env, model.dimensions, { refresh: false });
  const state = openState(env);
  const indexer = await startVectorIndexer({
    bus, vectors, model, contentOf: async (tenantId, recordId) => (await state.contents.get(tenantId, recordId)) ?? undefined,
    onRebuild: (stale) => log.warn({ stale, modelId: model.modelId }, 'vectors of another model found: embedding every record again from the log'),
  });
  const targets = await startVectorTargets({ bus, vectors, clock: systemClock });
  log.info({ modelId: model.modelId, dimensions: model.dimensions, priority: model.priority }, 'embedding model loaded');
  return {
    handle: {
      close: async () => { await targets.close(); await indexer.close(); await sealed.close(); await vectors.close(); await state.kv.close(); await model.close(); },
    },
    ready: async () => (await state.kv.ping()) && (await vectors.count().then(() => true, () => false)),
  };
});
