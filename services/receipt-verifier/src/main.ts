import { readFileSync } from 'node:fs';
import { openIndex, openSealedBus, openState, openSummaries, openVectors, parseEnvOrExit, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { loadEmbeddingModel } from '@gm/embedding';
import { loadPolicySetOrExit } from '@gm/policy';
import type { ReceiptKeyPair } from '@gm/policy/receipts';
import { systemClock } from '@gm/time';
import { ReceiptVerifierEnv } from './env.ts';
import { startReceiptSigner } from './receipts.ts';
import { startReceiptVerifier } from './verifier.ts';

/** receipt-verifier as its own process: probes every copy before a job may be verified, signs receipts. */
const policySet = loadPolicySetOrExit(parseEnvOrExit(ReceiptVerifierEnv, process.env, 'receipt-verifier').MEMORY_POLICY_DIR, 'receipt-verifier');

await runService('receipt-verifier', ReceiptVerifierEnv, async ({ env, log, metrics }) => {
  const keys = JSON.parse(readFileSync(env.MEMORY_RECEIPT_KEY_FILE, 'utf8')) as ReceiptKeyPair;
  // Opens content (the replays' probes) and holds the key store: it runs the `key` target.
  const sealed = await openSealedBus(env, 'receipt-verifier', 'open', { onError: (err) => log.warn({ err }, 'key store poll failed') });
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  const state = openState(env);
  const index = openIndex(env);
  const summaries = openSummaries(env);
  // The vectors are a copy too (§6.7): the replays probe them by kNN, with the model that made them.
  const model = env.MEMORY_SEMANTIC === 'on' ? await loadEmbeddingModel(env.MEMORY_EMBEDDING_MODEL_DIR) : undefined;
  const semantic = model === undefined ? undefined : { model, vectors: openVectors(env, model.dimensions) };
  const service = await startReceiptVerifier({
    bus, index, summaries, state, clock: systemClock, policySet, erasureWaitMs: env.MEMORY_ERASURE_MERGE_WAIT, ...(sealed.keys ? { keys: sealed.keys } : {}), ...(semantic === undefined ? {} : { semantic }),
  });
  const signer = await startReceiptSigner({ bus, state, clock: systemClock, log, metrics, keys });
  return {
    handle: {
      close: async () => {
        await signer.close(); await service.close(); await sealed.close(); await state.kv.close(); await index.close(); await summaries.close();
        await semantic?.vectors.close(); await semantic?.model.close();
      },
    },
    ready: () => state.kv.ping(),
  };
});
