import { z } from 'zod';
import { DistributedEnv, WithElasticsearch, WithInstanceId, WithMasterKeys, WithRedis, WithSemantic, WithSigningKey, brokerEnvShape } from '@gm/service-kit';

/** The retrieval-broker's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const RetrievalBrokerEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithElasticsearch.shape,
  ...brokerEnvShape,
  ...WithMasterKeys.shape,
  ...WithSemantic.shape,
  ...WithSigningKey.shape,
  MEMORY_ISSUER_CREDENTIAL_FILE: z.string().min(1).meta({
    description: 'a file holding the bearer credential for `POST /v1/capabilities` (≥ 32 characters; `generate-credentials.ts` writes `DIR/issuer-credential`)',
  }),
  ...WithInstanceId.shape,
});
