import { DistributedEnv, WithElasticsearch, WithMasterKeys, WithRedis, WithSemantic } from '@gm/config';

/** The vector-indexer's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const VectorIndexerEnv = DistributedEnv.extend({ ...WithElasticsearch.shape, ...WithRedis.shape, ...WithMasterKeys.shape, ...WithSemantic.shape });
