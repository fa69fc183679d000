import { DistributedEnv, WithMasterKeys, WithRedis, admissionEnvShape, ttlShape } from '@gm/service-kit';

/** write-admission's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const WriteAdmissionEnv = DistributedEnv.extend({
  ...ttlShape, ...admissionEnvShape, ...WithMasterKeys.shape, ...WithRedis.shape,
});
