import { DistributedEnv, WithMasterKeys, WithRedis } from '@gm/config';

/** The projector's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const ProjectorEnv = DistributedEnv.extend({ ...WithRedis.shape, ...WithMasterKeys.shape });
