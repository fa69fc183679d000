import { DistributedEnv, WithRedis, duration } from '@gm/config';

/** The expiry-scheduler's interval, read the same way by the embedded runtime and the service. */
export const expiryEnvShape = {
  MEMORY_EXPIRY_TICK: duration('1s', true).meta({ description: 'expiry-scheduler interval' }),
};

/** The expiry-scheduler's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const ExpirySchedulerEnv = DistributedEnv.extend({ ...WithRedis.shape, ...expiryEnvShape });
