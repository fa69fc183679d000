import { openSealedBus, openState, runService } from '@gm/adapters';
import { meteredBus, tracedBus } from '@gm/bus';
import { keyringSnapshotSealer, startTransitSweeper } from '@gm/crypto';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from './admission.ts';
import { WriteAdmissionEnv, admissionSettingsOf, ttlPolicyOf } from './env.ts';

/** write-admission as its own process: the single writer of memory.events (design §4). */
await runService('write-admission', WriteAdmissionEnv, async ({ env, log, metrics }) => {
  // The only service that creates keys, so the one that re-wraps KEKs after a master-key rotation.
  const sealed = await openSealedBus(env, 'write-admission', 'open', { rotate: true, onError: (err) => log.warn({ err }, 'key store poll failed') });
  if (sealed.rotation) log.info({ ...sealed.rotation }, 'subject keys re-wrapped with the active master key');
  const bus = tracedBus(meteredBus(sealed.bus, metrics), 'kafka');
  // Past transit keys go once this group has consumed what they sealed (commands become unreadable too).
  const sweeper = sealed.keys
    ? startTransitSweeper({
      bus: sealed.raw, keyring: sealed.keys.keyring, groupId: WRITE_ADMISSION_GROUP, clock: Date.now,
      onSwept: (count) => log.info({ count }, 'transit keys destroyed'), onError: (err) => log.warn({ err }, 'transit key sweep failed'),
    })
    : undefined;
  // Subject state snapshots live in Redis beside the other rebuildable state (design §4).
  const state = openState(env);
  const admission = admissionSettingsOf(env);
  const service = await startWriteAdmission({
    bus, log, metrics, decide: { ttl: ttlPolicyOf(env), idempotencyWindowMs: env.MEMORY_IDEMPOTENCY_WINDOW },
    snapshots: {
      store: state.admission, intervalMs: admission.snapshotIntervalMs, maxEntries: admission.maxEntries,
      // The stored states' hashes sealed under each subject's key, so a forget takes them from every copy (§8.5).
      ...(sealed.keys ? { sealer: keyringSnapshotSealer(sealed.keys.keyring) } : {}),
    },
  });
  return {
    handle: { close: async () => { await sweeper?.close(); await service.close(); await state.kv.close(); await sealed.close(); } },
    ready: async () => (await bus.endOffsets('memory.events')).length > 0,
  };
});
