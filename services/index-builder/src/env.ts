import { DistributedEnv, WithElasticsearch, WithMasterKeys, WithRedis } from '@gm/config';

/** The index-builder's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const IndexBuilderEnv = DistributedEnv.extend({ ...WithElasticsearch.shape, ...WithRedis.shape, ...WithMasterKeys.shape });
