import { DistributedEnv, WithInstanceId, WithMasterKeys, WithRedis, WithSigningKey, brokerEnvShape } from '@gm/service-kit';

/** The ingest-gateway's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const IngestGatewayEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithMasterKeys.shape,
  MEMORY_ISSUER_NAME: brokerEnvShape.MEMORY_ISSUER_NAME,
  MEMORY_POLICY_DIR: brokerEnvShape.MEMORY_POLICY_DIR,
  // Only the key pair's public half is used: the gateway verifies capabilities, it issues none.
  ...WithSigningKey.shape,
  ...WithInstanceId.shape,
});
