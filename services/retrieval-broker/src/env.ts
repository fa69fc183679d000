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
  MEMORY_OPS_METRICS_URLS: z.string().min(1)
    .transform((text, ctx) => {
      const urls = text.split(',').map((u) => u.trim()).filter((u) => u !== '');
      for (const url of urls) {
        if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) ctx.addIssue({ code: 'custom', message: `not an http(s) URL: ${url}` });
      }
      return urls;
    })
    .optional()
    .meta({
      description: "comma-separated `/metrics` URLs of the other services (e.g. each one's `HEALTH_PORT`): what `GET /v1/ops/overview` aggregates besides this broker's own ([console.md](console.md#operations))",
      whenUnset: "this broker's own metrics only",
    }),
  ...WithInstanceId.shape,
});
