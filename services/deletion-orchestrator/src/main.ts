import { openSealedBus, openState, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { systemClock } from '@gm/time';
import { OrchestratorEnv } from './env.ts';
import { startDeletionOrchestrator } from './orchestrator.ts';

/** deletion-orchestrator as its own process (design §8). */
await runService('deletion-orchestrator', OrchestratorEnv, async ({ env, log, metrics }) => {
  // Metadata only: the orchestrator holds no key; the receipt-verifier runs the `key` target.
  const sealed = await openSealedBus(env, 'deletion-orchestrator', 'redact');
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
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
