import { z } from 'zod';
import { DistributedEnv, WithRedis, WithSemantic, duration } from '@gm/config';
import { DeletionTarget } from '@gm/contracts';
import { deletionTargetsOf } from '@gm/domain';

/** The deletion-orchestrator's deadline and retry, read the same way by the embedded runtime and the service. */
export const deletionEnvShape = {
  MEMORY_DELETION_DEADLINE: duration('60s').meta({ description: 'a deletion job not verified by then fails with an alert' }),
  MEMORY_DELETION_VERIFY_RETRY: duration('500ms', true).meta({ description: 'delay before re-running a verification that found a copy' }),
};

/** The copies that must vouch for a deletion; unset: every copy the deployment keeps (`deletionTargetsOf`), see `deletionTargetsFrom`. */
export const deletionTargetsShape = {
  MEMORY_DELETION_TARGETS: z.string().optional()
    .transform((v) => (v === undefined ? undefined : v.split(',').map((t) => t.trim())))
    .pipe(z.array(DeletionTarget).min(1).optional())
    .meta({
      description: 'comma-separated deletion targets, the copies that must each vouch for a deletion ([deletion.md](deletion.md)); naming `vector` with `MEMORY_SEMANTIC=off` is refused at start: no vector-indexer would acknowledge it',
      whenUnset: `\`${deletionTargetsOf(true).join(',')}\` (\`vector\` only while \`MEMORY_SEMANTIC=on\`)`,
    }),
};

/** The targets a deployment's jobs wait for: the ones named, or every copy it keeps. */
export const deletionTargetsFrom = (env: { MEMORY_DELETION_TARGETS?: DeletionTarget[] | undefined; MEMORY_SEMANTIC: 'on' | 'off' }): DeletionTarget[] =>
  env.MEMORY_DELETION_TARGETS ?? deletionTargetsOf(env.MEMORY_SEMANTIC === 'on');

/** The deletion-orchestrator's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const OrchestratorEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithSemantic.pick({ MEMORY_SEMANTIC: true }).shape,
  ...deletionEnvShape,
  ...deletionTargetsShape,
}).refine((env) => env.MEMORY_SEMANTIC === 'on' || !env.MEMORY_DELETION_TARGETS?.includes('vector'), {
  // No vector-indexer runs to acknowledge it: every job would wait out its deadline and fail.
  message: '`vector` is a target only while MEMORY_SEMANTIC=on (no vector-indexer runs to serve it)', path: ['MEMORY_DELETION_TARGETS'],
}).transform((env) => ({
  ...env,
  MEMORY_DELETION_TARGETS: deletionTargetsFrom(env),
}));
