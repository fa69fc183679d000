import { readFileSync } from 'node:fs';
import { openSealedBus, openState, parseEnvOrExit, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { DEFAULT_MODEL_DIR, modelOfDir } from '@gm/embedding';
import { loadPolicySetOrExit, type SigningKeyPair } from '@gm/policy';
import { systemClock } from '@gm/time';
import { edgeAuthority } from '@gm/write-edge';
import { IngestGatewayEnv } from './env.ts';
import { startIngestGateway } from './gateway.ts';
import { SeenProofs } from './seen-proofs.ts';

/**
 * ingest-gateway as its own process: the edge of memory.ingest (docs/ingest.md), its own consumer
 * group. Scale it by adding instances, up to the topic's partition count.
 */
const env = parseEnvOrExit(IngestGatewayEnv, process.env, 'ingest-gateway');
const policySet = loadPolicySetOrExit(env.MEMORY_POLICY_DIR, 'ingest-gateway');

await runService('ingest-gateway', IngestGatewayEnv, async ({ env, log, metrics }) => {
  const { publicJwk } = JSON.parse(readFileSync(env.MEMORY_SIGNING_KEY_FILE, 'utf8')) as SigningKeyPair;
  // An edge like the HTTP API: it seals the content of the commands it sends and reads none back.
  const sealed = await openSealedBus(env, `ingest-gateway-${env.MEMORY_INSTANCE_ID}`, 'edge');
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  const state = openState(env);
  const { pdp, verifier } = await edgeAuthority({ state, clock: systemClock, policySet, publicJwk, issuerName: env.MEMORY_ISSUER_NAME });
  // A request's own embedding is checked against the stack's model, which its directory's files
  // name (nothing is loaded: the gateway embeds nothing); with MEMORY_SEMANTIC=off it is refused.
  const spec = env.MEMORY_SEMANTIC === 'off' ? undefined : modelOfDir(env.MEMORY_EMBEDDING_MODEL_DIR ?? DEFAULT_MODEL_DIR);
  const semantic = spec === undefined ? {} : { semantic: { model: { modelId: spec.id, dimensions: spec.dimensions } } };
  // Proofs name the topic as producers write to it, namespace included (docs/ingest.md#producer-proofs).
  const windowMs = env.MEMORY_INGEST_PROOF_WINDOW_SECONDS * 1000;
  const producers = {
    topic: `${env.MEMORY_NAMESPACE ? `${env.MEMORY_NAMESPACE}.` : ''}${TOPICS.ingest}`,
    windowMs,
    unbound: env.MEMORY_INGEST_UNBOUND_CAPABILITIES ?? (env.MEMORY_PRODUCTION ? 'refuse' : 'accept'),
    seen: new SeenProofs(state.kv, state.keys.prefix, 2 * windowMs),
  } as const;
  if (producers.unbound === 'accept') log.warn({ topic: TOPICS.ingest }, 'memory.ingest accepts unbound capabilities: anyone who reads the topic can replay them (docs/ingest.md#migrating-producers)');
  const rateLimit = { perMinute: env.MEMORY_RATE_LIMIT_PER_MINUTE, counters: state.rateCounters };
  const gateway = await startIngestGateway({ bus, verifier, pdp, state, clock: systemClock, log, metrics, producers, rateLimit, ...semantic });
  return {
    handle: { close: async () => { await gateway.close(); await sealed.close(); await state.kv.close(); } },
    ready: async () => (await state.kv.ping()) && (await bus.endOffsets(TOPICS.ingest)).length > 0,
  };
});
