import { readFileSync } from 'node:fs';
import { openIndex, openSealedBus, openState, openSummaries, openVectors, parseEnvOrExit, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { loadEmbeddingModel } from '@gm/embedding';
import { loadPolicySetOrExit, type SigningKeyPair } from '@gm/policy';
import { systemClock } from '@gm/time';
import { RetrievalBrokerEnv, brokerSettingsOf } from './env.ts';
import { startRetrievalBroker } from './start.ts';

/** retrieval-broker as its own process: the HTTP API of design §9. Scale it by adding instances. */
const env = parseEnvOrExit(RetrievalBrokerEnv, process.env, 'retrieval-broker');
const policySet = loadPolicySetOrExit(env.MEMORY_POLICY_DIR, 'retrieval-broker');

await runService('retrieval-broker', RetrievalBrokerEnv, async ({ env, log, metrics }) => {
  const signing = JSON.parse(readFileSync(env.MEMORY_SIGNING_KEY_FILE, 'utf8')) as SigningKeyPair;
  const issuerCredential = readFileSync(env.MEMORY_ISSUER_CREDENTIAL_FILE, 'utf8').trim();
  if (issuerCredential.length < 32) throw new Error('MEMORY_ISSUER_CREDENTIAL_FILE must hold at least 32 characters');
  // The edge seals the content of the commands it sends; it reads no content from the log.
  const sealed = await openSealedBus(env, `retrieval-broker-${env.MEMORY_INSTANCE_ID}`, 'edge');
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  const state = openState(env);
  const index = openIndex(env);
  const summaries = openSummaries(env);
  // Semantic retrieval (§6.7): the query's embedding by the same model as the vector-indexer's
  // (in a thread of its own, so a query's inference never stalls the API), kNN in Elasticsearch.
  const model = env.MEMORY_SEMANTIC === 'on' ? await loadEmbeddingModel(env.MEMORY_EMBEDDING_MODEL_DIR) : undefined;
  const semantic = model === undefined ? undefined : { model, vectors: openVectors(env, model.dimensions) };
  const { host, port, issuerName, policyDir: _policyDir, consoleDir, ...config } = brokerSettingsOf(env, env.MEMORY_PRODUCTION);
  const broker = await startRetrievalBroker({
    bus, index, summaries, ...(semantic === undefined ? {} : { semantic }), state, clock: systemClock, log, metrics, signing, issuerCredential, policySet,
    issuerName, instanceId: env.MEMORY_INSTANCE_ID, host, port, config,
    ...(consoleDir === undefined ? {} : { consoleDir }), opsMetricsUrls: env.MEMORY_OPS_METRICS_URLS ?? [],
    ready: async () => (await state.kv.ping()) && (await index.count().then(() => true, () => false)) && (await bus.endOffsets(TOPICS.events)).length > 0,
  });
  process.stderr.write(`retrieval-broker listening on ${broker.url}\n`);
  return {
    handle: {
      close: async () => {
        await broker.close(); await sealed.close(); await state.kv.close(); await index.close(); await summaries.close();
        await semantic?.vectors.close(); await semantic?.model.close();
      },
    },
    ready: async () => (await state.kv.ping()) && (await index.count().then(() => true, () => false)),
  };
});
