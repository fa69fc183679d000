/** Producer authentication for the specs of everything else the gateway does: the old form (bearer capabilities) accepted. */
import type { EmbeddedFixture } from '@gm/testing/embedded-fixture';
import type { ProducerAuthConfig } from './producer-auth.ts';
import { SeenProofs } from './seen-proofs.ts';

const WINDOW_MS = 300_000;

export const legacyProducers = (fx: EmbeddedFixture, topic: string): ProducerAuthConfig => ({
  topic, windowMs: WINDOW_MS, unbound: 'accept', seen: new SeenProofs(fx.state.kv, fx.state.keys.prefix, 2 * WINDOW_MS),
});
