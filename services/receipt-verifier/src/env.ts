import { z } from 'zod';
import { DistributedEnv, duration, WithElasticsearch, WithMasterKeys, WithPolicy, WithRedis, WithSemantic } from '@gm/config';

/** The receipt-verifier's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const ReceiptVerifierEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithElasticsearch.shape,
  ...WithMasterKeys.shape,
  ...WithSemantic.shape,
  MEMORY_RECEIPT_KEY_FILE: z.string().min(1).meta({
    description: 'the receipt signing key pair (JSON `{privateJwk, publicJwk}`, Ed25519; `generate-credentials.ts` writes `DIR/keys/receipt-signing.jwk.json` and its public half). The verifier publishes the public half to the state store at start, where the broker serves it as `GET /v1/receipt-keys`; only the receipt-verifier holds the private key',
  }),
  MEMORY_ERASURE_MERGE_WAIT: duration('45s').meta({
    description: 'how long the `key` target waits for Elasticsearch to release a job\'s deleted documents for merging (each shard copy\'s retention lease moves on about every 30 s) before the receipt says `pending_compaction` for that copy instead of `erased`; the wait ends 15 s before the job\'s deadline at the latest, so a lease that has not moved yet never fails a job ([deletion.md](deletion.md#erasure-on-disk))',
  }),
  // The broker's policy set decides the replayed reads too.
  MEMORY_POLICY_DIR: WithPolicy.shape.MEMORY_POLICY_DIR,
});
