import { DistributedEnv, WithRedis, expiryEnvShape } from '@gm/service-kit';

/** The expiry-scheduler's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const ExpirySchedulerEnv = DistributedEnv.extend({ ...WithRedis.shape, ...expiryEnvShape });
