import { z } from 'zod';
import { DistributedEnv, WithElasticsearch, WithMasterKeys, WithPolicy, WithRedis, WithSemantic } from '@gm/config';

/** The receipt-verifier's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const ReceiptVerifierEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithElasticsearch.shape,
  ...WithMasterKeys.shape,
  ...WithSemantic.shape,
  MEMORY_RECEIPT_KEY_FILE: z.string().min(1).meta({
    description: 'the receipt signing key pair (JSON `{privateJwk, publicJwk}`, Ed25519; `generate-credentials.ts` writes `DIR/keys/receipt-signing.jwk.json` and its public half). The verifier publishes the public half to the state store at start, where the broker serves it as `GET /v1/receipt-keys`; only the receipt-verifier holds the private key',
  }),
  // The broker's policy set decides the replayed reads too.
  MEMORY_POLICY_DIR: WithPolicy.shape.MEMORY_POLICY_DIR,
});
