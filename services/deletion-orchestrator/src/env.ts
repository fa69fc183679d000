import { z } from 'zod';
import { DeletionTarget } from '@gm/contracts';
import { deletionTargetsOf } from '@gm/domain';
import { DistributedEnv, WithRedis, WithSemantic, duration } from '@gm/service-kit';

export const OrchestratorEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithSemantic.pick({ MEMORY_SEMANTIC: true }).shape,
  MEMORY_DELETION_DEADLINE: duration('60s'),
  MEMORY_DELETION_VERIFY_RETRY: duration('500ms', true),
  /** Default: every copy the deployment keeps (`deletionTargetsOf`: `vector` only while MEMORY_SEMANTIC=on). */
  MEMORY_DELETION_TARGETS: z.string().optional()
    .transform((v) => (v === undefined ? undefined : v.split(',').map((t) => t.trim())))
    .pipe(z.array(DeletionTarget).min(1).optional()),
}).refine((env) => env.MEMORY_SEMANTIC === 'on' || !env.MEMORY_DELETION_TARGETS?.includes('vector'), {
  // No vector-indexer runs to acknowledge it: every job would wait out its deadline and fail.
  message: '`vector` is a target only while MEMORY_SEMANTIC=on (no vector-indexer runs to serve it)', path: ['MEMORY_DELETION_TARGETS'],
}).transform((env) => ({
  ...env,
  MEMORY_DELETION_TARGETS: env.MEMORY_DELETION_TARGETS ?? deletionTargetsOf(env.MEMORY_SEMANTIC === 'on'),
}));
