import type { Bus } from '@gm/bus';
import type { KeyStore } from '../key-store.ts';
import { openKeyring, type Keyring, type RotationResult } from '../keyring.ts';
import type { MasterKeys } from '../master-keys.ts';
import { ContentCodec } from './content-codec.ts';
import { sealedBus } from './sealed-bus.ts';

/**
 * How much of the content a service may see on memory.commands / memory.events:
 * - `open`: reads and writes content (write-admission, projector, index-builder, verifier);
 * - `edge`: seals the commands it sends with its transit keys, reads no content (the API);
 * - `redact`: metadata only, holds no key at all (deletion-orchestrator, expiry-scheduler).
 */
export type ContentRole = 'open' | 'edge' | 'redact';

export interface ContentCrypto {
  readonly keyring: Keyring;
  readonly masterKeys: MasterKeys;
  /** Set when opening re-wrapped KEKs under the active master key (`rotate`). */
  readonly rotation: RotationResult | undefined;
  view(bus: Bus, role: ContentRole): Bus;
  /** Drops every cached key; the key store stays open (its owner closes it). */
  close(): void;
}

export interface ContentCryptoOptions {
  masterKeys: MasterKeys;
  store: KeyStore;
  /**
   * Re-wrap every KEK that another master key wrapped with the active one (master-key rotation,
   * docs/encryption.md). Only a key-creating service (write-admission, the embedded
   * runtime) should: re-wrapping is idempotent, but one writer keeps the store quiet.
   */
  rotate?: boolean;
  ttlMs?: number;
  /** Names this instance's transit keys (the commands it seals); unique per running instance. */
  instanceId?: string;
  /** Epoch-ms clock for transit key hours (default Date.now). */
  clock?: () => number;
}

/** Opens the keyring (a wrong or missing master key fails here, before anything reads the log). */
export async function openContentCrypto(options: ContentCryptoOptions): Promise<ContentCrypto> {
  const { masterKeys, store } = options;
  const keyring = await openKeyring({ masterKeys, store, ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }) });
  let rotation: RotationResult | undefined;
  const active = masterKeys.keys.get(masterKeys.active);
  if (options.rotate === true && active !== undefined) {
    // Re-wraps only what another master key wrapped: a no-op scan once the rotation is done.
    const result = await keyring.rotateMasterKey({ id: masterKeys.active, key: active });
    if (result.rewrapped > 0 || result.destroyedMeanwhile > 0) rotation = result;
  }
  const transit = { instanceId: options.instanceId ?? 'local', ...(options.clock ? { clock: options.clock } : {}) };
  const codecs: Record<ContentRole, ContentCodec> = {
    open: new ContentCodec({ mode: 'open', keyring, ...transit }),
    edge: new ContentCodec({ mode: 'redact', keyring, ...transit }),
    redact: new ContentCodec({ mode: 'redact' }),
  };
  return {
    keyring, masterKeys, rotation,
    view: (bus, role) => sealedBus(bus, codecs[role]),
    close: () => keyring.close(),
  };
}

/** A view for a service that holds no key at all (distributed orchestrator and expiry-scheduler). */
export const redactedBus = (bus: Bus): Bus => sealedBus(bus, new ContentCodec({ mode: 'redact' }));
