import { z } from 'zod';
import { DeletionTarget } from '@gm/contracts';
import { DistributedEnv, WithRedis, WithSemantic, duration, meteredBus, openSealedBus, openState, runService, systemClock } from '@gm/service-kit';
import { startDeletionOrchestrator } from './orchestrator.ts';

/** deletion-orchestrator as its own process (design §8). */
/** Every copy the distributed runtime keeps; `vector` while semantic retrieval is on (the vector-indexer serves it). */
const DEFAULT_TARGETS = ['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet', 'key'] as const;

const Env = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithSemantic.pick({ MEMORY_SEMANTIC: true }).shape,
  MEMORY_DELETION_DEADLINE: duration('60s'),
  MEMORY_DELETION_VERIFY_RETRY: duration('500ms', true),
  /** Default: DEFAULT_TARGETS, without `vector` when MEMORY_SEMANTIC=off. */
  MEMORY_DELETION_TARGETS: z.string().optional()
    .transform((v) => (v === undefined ? undefined : v.split(',').map((t) => t.trim())))
    .pipe(z.array(DeletionTarget).min(1).optional()),
}).refine((env) => env.MEMORY_SEMANTIC === 'on' || !env.MEMORY_DELETION_TARGETS?.includes('vector'), {
  // No vector-indexer runs to acknowledge it: every job would wait out its deadline and fail.
  message: '`vector` is a target only while MEMORY_SEMANTIC=on (no vector-indexer runs to serve it)', path: ['MEMORY_DELETION_TARGETS'],
}).transform((env) => ({
  ...env,
  MEMORY_DELETION_TARGETS: env.MEMORY_DELETION_TARGETS ?? DEFAULT_TARGETS.filter((t) => t !== 'vector' || env.MEMORY_SEMANTIC === 'on'),
}));

await runService('deletion-orchestrator', Env, async ({ env, log, metrics }) => {
  // Metadata only: the orchestrator holds no key; the receipt-verifier runs the `key` target.
  const sealed = await openSealedBus(env, 'deletion-orchestrator', 'redact');
  // Consumer lag of every group this process runs, on /metrics.
  const bus = meteredBus(sealed.bus, metrics);
  const state = openState(env);
  const service = await startDeletionOrchestrator({
    bus, state, clock: systemClock, log, metrics, targets: env.MEMORY_DELETION_TARGETS,
    deadlineMs: env.MEMORY_DELETION_DEADLINE, verifyRetryMs: env.MEMORY_DELETION_VERIFY_RETRY, tickMs: 250,
  });
  return {
    handle: { close: async () => { await service.close(); await sealed.close(); await state.kv.close(); } },
    ready: () => state.kv.ping(),
  };
});
