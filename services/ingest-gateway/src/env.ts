import { DistributedEnv, WithInstanceId, WithMasterKeys, WithPolicy, WithRateLimit, WithRedis, WithSemantic, WithSigningKey } from '@gm/config';

/** The ingest-gateway's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const IngestGatewayEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithMasterKeys.shape,
  ...WithPolicy.shape,
  // Only the key pair's public half is used: the gateway verifies capabilities, it issues none.
  ...WithSigningKey.shape,
  ...WithInstanceId.shape,
  // Which model a request's own embedding must come from (none is loaded).
  ...WithSemantic.shape,
  // The HTTP edge's limit per verified principal, counted in Redis across the instances.
  ...WithRateLimit.shape,
});
