import { openSealedBus, openState, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { systemClock } from '@gm/time';
import { ProjectorEnv } from './env.ts';
import { startPolicyProjector } from './policy-projector.ts';
import { startPrimaryTarget } from './primary-target.ts';
import { startProjector } from './projector.ts';

/** projector as its own process: record hash, primary content, tombstones, memory.records, policy data. */
await runService('projector', ProjectorEnv, async ({ env, log, metrics }) => {
  const sealed = await openSealedBus(env, 'projector', 'open', { onError: (err) => log.warn({ err }, 'key store poll failed') });
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  const state = openState(env);
  const projector = await startProjector({ bus, state, log });
  const primary = await startPrimaryTarget({ bus, state, clock: systemClock });
  const policies = await startPolicyProjector({ bus, state, log: log.child({ consumer: 'policy-projector' }) });
  return {
    handle: {
      close: async () => { await policies.close(); await primary.close(); await projector.close(); await sealed.close(); await state.kv.close(); },
    },
    ready: () => state.kv.ping(),
  };
});
