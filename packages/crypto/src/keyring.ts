import { GovernedMemoryError } from '@gm/contracts';
import { decryptContent, encryptContent, type ContentAad, type Envelope, type EnvelopeVersion, type SecretKey } from './envelope.ts';
import { CryptoError, isCryptoError } from './errors.ts';
import type { KeyStore, TombstoneOutcome } from './key-store.ts';
import { PSEUDONYM_KEY_ID, dataKeyId, derivePseudonymKey, generateKey, isKekId, kekId, keyedDigest, snapshotKeyRecordId, unwrapKey, wrapKey, type WrappedKey } from './keys.ts';
import { masterKeys as checkMasterKeys, type MasterKey, type MasterKeys } from './master-keys.ts';

export interface KeyringOptions {
  masterKeys: MasterKeys;
  store: KeyStore;
  /** Epoch-ms clock for the cache TTL (default Date.now). */
  clock?: () => number;
  /**
   * How long an unwrapped key stays cached (default 30 s). It bounds how long a tombstone
   * written by another instance that this one is not told about can go unnoticed here.
   */
  ttlMs?: number;
  /** At most this many unwrapped keys stay cached (default 10,000); the oldest go first. */
  maxCachedKeys?: number;
}

export interface RecordKeyRef {
  tenantId: string;
  subjectId: string;
  recordId: string;
  /** Data key generation (default 1); a new generation re-keys a record. */
  generation?: number;
  /** The subject's KEK generation a new data key is wrapped under (default 1); see MemoryWritten.keyGeneration. */
  kekGeneration?: number;
}

export interface RotationResult {
  /** KEKs re-wrapped with the new master key. */
  rewrapped: number;
  /** KEKs destroyed while the rotation ran (a forget won the race): nothing to re-wrap. */
  destroyedMeanwhile: number;
}

interface CacheEntry {
  key: SecretKey;
  /** The KEK that wrapped a data key: dropping the KEK drops it too. */
  parent: string | undefined;
  expiresAt: number;
}

/**
 * The service-side holder of unwrapped keys. Opening checks the configured master keys
 * against the store (a wrong or missing master key is a startup error, never new keys).
 */
export async function openKeyring(options: KeyringOptions): Promise<Keyring> {
  const keys = checkMasterKeys(options.masterKeys.active, options.masterKeys.keys);
  await verifyMasterKeys(keys, await options.store.all());
  const pseudonymKey = await loadOrCreatePseudonymKey(options.store, keys);
  return new Keyring(options.store, keys, pseudonymKey, options.clock ?? Date.now, options.ttlMs ?? 30_000, options.maxCachedKeys ?? 10_000);
}

/** The deployment's pseudonym key (keys.ts PSEUDONYM_KEY_ID), made at the first open that finds none. */
async function loadOrCreatePseudonymKey(store: KeyStore, keys: MasterKeys): Promise<SecretKey> {
  const found = await store.get(PSEUDONYM_KEY_ID);
  if (found.status === 'destroyed') {
    throw new CryptoError('MASTER_KEY_MISMATCH', `the pseudonym key ${PSEUDONYM_KEY_ID} was destroyed: key ids of subjects can no longer be derived`);
  }
  if (found.status === 'present') {
    const master = keys.keys.get(found.wrapped.wrappedBy);
    if (found.wrapped.kind !== 'pk' || master === undefined) throw new CryptoError('AUTH_FAILED', `key ${PSEUDONYM_KEY_ID} is not a pseudonym key wrapped by a configured master key`);
    return unwrapKey(found.wrapped, { kid: found.wrapped.wrappedBy, key: master });
  }
  const active: SecretKey = { kid: keys.active, key: keys.keys.get(keys.active) as Buffer };
  const key = derivePseudonymKey(active);
  await store.put(PSEUDONYM_KEY_ID, wrapKey('pk', key, active));
  return key;
}

/** Every master key id that wrapped a KEK must be configured, and the configured bytes must open one of its KEKs. */
async function verifyMasterKeys(keys: MasterKeys, stored: WrappedKey[]): Promise<void> {
  const firstByMaster = new Map<string, WrappedKey>();
  for (const wrapped of stored) {
    if (wrapped.kind !== 'dk' && !firstByMaster.has(wrapped.wrappedBy)) firstByMaster.set(wrapped.wrappedBy, wrapped);
  }
  for (const [masterId, kek] of firstByMaster) {
    const key = keys.keys.get(masterId);
    if (key === undefined) {
      throw new CryptoError(
        'MASTER_KEY_MISMATCH',
        `the key store holds KEKs wrapped by master key "${masterId}", which is not configured (configured: ${[...keys.keys.keys()].join(', ')}); ` +
          'keep every master key configured until a rotation away from it has finished',
      );
    }
    try {
      unwrapKey(kek, { kid: masterId, key });
    } catch (cause) {
      throw new CryptoError(
        'MASTER_KEY_MISMATCH',
        `master key "${masterId}" cannot unwrap the KEKs it is recorded to have wrapped: wrong key material for this id`,
        { cause },
      );
    }
  }
}

export class Keyring {
  private readonly cache = new Map<string, CacheEntry>();
  /** Destroyed ids seen, so a fetch that raced a tombstone cannot put the key back in the cache. */
  private readonly destroyed = new Set<string>();
  /**
   * Get-or-create calls in flight, by key id. The store has no compare-and-set: two concurrent
   * callers (sealedBus seals a batch with Promise.all) would each create and put a key, the last
   * put wins, and whatever the other sealed could never be opened again.
   */
  private readonly creating = new Map<string, Promise<SecretKey>>();
  private readonly unsubscribe: () => void;
  private masters: Map<string, Buffer>;
  private activeMaster: string;

  constructor(
    private readonly store: KeyStore,
    masterKeys: MasterKeys,
    /** Keys every id derived from a subject (kekId, snapshotKeyRecordId); see keys.ts. */
    private readonly pseudonymKey: SecretKey,
    private readonly clock: () => number,
    private readonly ttlMs: number,
    private readonly maxCachedKeys = 10_000,
  ) {
    this.masters = new Map(masterKeys.keys);
    this.activeMaster = masterKeys.active;
    this.unsubscribe = store.onDestroyed((kid) => this.drop(kid));
  }

  get activeMasterKeyId(): string {
    return this.activeMaster;
  }

  /** Encrypts a record's content with its data key, creating the subject's KEK and the data key on first use. */
  async encrypt(plaintext: string, aad: ContentAad & { generation?: number; kekGeneration?: number }, v: EnvelopeVersion = 1): Promise<Envelope> {
    return encryptContent(plaintext, await this.dataKeyFor(aad), aad, v);
  }

  /** The content, or CryptoError: KEY_DESTROYED (forgotten / deleted), AUTH_FAILED (tampered or moved). */
  async decrypt(envelope: Envelope, aad: ContentAad): Promise<string> {
    return decryptContent(envelope, await this.dataKey(envelope.kid), aad);
  }

  /** The record's data key, created (and wrapped with the subject's KEK) when missing. */
  async dataKeyFor(ref: RecordKeyRef): Promise<SecretKey> {
    const kid = dataKeyId(ref.tenantId, ref.recordId, ref.generation ?? 1);
    const cached = this.cached(kid);
    if (cached !== undefined) return cached;
    return this.singleFlight(kid, async () => {
      const found = await this.store.get(kid);
      if (found.status === 'destroyed') throw destroyedError(kid);
      if (found.status === 'present') return this.unwrapDataKey(found.wrapped);
      const kek = await this.kekById(this.subjectKekId(ref.tenantId, ref.subjectId, ref.kekGeneration ?? 1), true);
      const dataKey = generateKey(kid);
      await this.store.put(kid, wrapKey('dk', dataKey, kek));
      return this.remember(dataKey, kek.kid);
    });
  }

  /**
   * The transit key `kid` (sealing/transit.ts), created under the active master key when
   * missing and `create` is set — only ever by the instance its id names, so never raced.
   */
  async transitKey(kid: string, create: boolean): Promise<SecretKey> {
    const cached = this.cached(kid);
    if (cached !== undefined) return cached;
    return this.singleFlight(kid, async () => {
      const found = await this.store.get(kid);
      if (found.status === 'destroyed') throw destroyedError(kid);
      if (found.status === 'present') {
        if (found.wrapped.kind !== 'tk') throw new CryptoError('AUTH_FAILED', `key ${kid} is not a transit key`);
        return this.remember(unwrapKey(found.wrapped, this.master(found.wrapped.wrappedBy)), undefined);
      }
      if (!create) throw new CryptoError('KEY_MISSING', `transit key ${kid} is not in the key store`);
      const key = generateKey(kid);
      await this.store.put(kid, wrapKey('tk', key, this.master(this.activeMaster)));
      return this.remember(key, undefined);
    });
  }

  /** Every transit key still in the store (ids only), for the sweeper. */
  async transitKeyIds(): Promise<string[]> {
    return (await this.store.all()).filter((w) => w.kind === 'tk').map((w) => w.kid);
  }

  /** A data key by id (what an envelope names); never creates one. */
  async dataKey(kid: string): Promise<SecretKey> {
    const cached = this.cached(kid);
    if (cached !== undefined) return cached;
    const found = await this.store.get(kid, { named: true });
    if (found.status === 'destroyed') throw destroyedError(kid);
    if (found.status === 'missing') throw new CryptoError('KEY_MISSING', `data key ${kid} is not in the key store`);
    return this.unwrapDataKey(found.wrapped);
  }

  /** Crypto-shreds one KEK generation of a subject: every data key under it becomes unreadable. */
  async forgetSubject(tenantId: string, subjectId: string, kekGeneration = 1): Promise<TombstoneOutcome> {
    return this.destroyKey(this.subjectKekId(tenantId, subjectId, kekGeneration));
  }

  /** The id of a subject's KEK of one generation: a keyed digest, so it confirms no guessed subject id. */
  subjectKekId(tenantId: string, subjectId: string, kekGeneration = 1): string {
    return kekId(this.pseudonymKey, tenantId, subjectId, kekGeneration);
  }

  /** A keyed digest of tenant and subject under `label` (one label per use, so uses cannot be linked). */
  subjectPseudonym(tenantId: string, subjectId: string, label: string): string {
    return keyedDigest(this.pseudonymKey, [label, tenantId, subjectId]);
  }

  /** The "record id" of write-admission's snapshot key of a subject's generation (sealing/snapshot-sealer.ts). */
  snapshotKeyRecordId(tenantId: string, subjectId: string, kekGeneration: number): string {
    return snapshotKeyRecordId(this.pseudonymKey, tenantId, subjectId, kekGeneration);
  }

  /** Destroys a key by id (a KEK or a data key) for good; idempotent. Says what the store still holds. */
  async destroyKey(kid: string): Promise<TombstoneOutcome> {
    // Dropped from the cache even when the store must be retried: the row is destroyed already.
    try {
      return await this.store.tombstone(kid);
    } finally {
      this.drop(kid);
    }
  }

  /** Crypto-shreds one record (one generation of its data key); its siblings stay readable. */
  async destroyDataKey(tenantId: string, recordId: string, generation = 1): Promise<TombstoneOutcome> {
    return this.destroyKey(dataKeyId(tenantId, recordId, generation));
  }

  /**
   * Makes `next` the active master key and re-wraps every KEK with it. The old master keys
   * stay usable here (and must stay configured everywhere) until this has returned; running it
   * again after a crash finishes what is left. New KEKs are wrapped with `next` from the start.
   */
  async rotateMasterKey(next: MasterKey): Promise<RotationResult> {
    const known = this.masters.get(next.id);
    if (known !== undefined && !known.equals(next.key)) {
      throw new CryptoError('MASTER_KEY_CONFIG', `master key "${next.id}" is already configured with other key material`);
    }
    checkMasterKeys(next.id, new Map([[next.id, next.key]]), 'rotateMasterKey');
    this.masters.set(next.id, next.key);
    this.activeMaster = next.id;
    const wrapping: SecretKey = { kid: next.id, key: next.key };
    const result: RotationResult = { rewrapped: 0, destroyedMeanwhile: 0 };
    for (const wrapped of await this.store.all()) {
      // KEKs, transit keys and the pseudonym key hang off a master key; data keys hang off KEKs and need nothing.
      if (wrapped.kind === 'dk' || wrapped.wrappedBy === next.id) continue;
      const kek = unwrapKey(wrapped, this.master(wrapped.wrappedBy));
      try {
        await this.store.put(kek.kid, wrapKey(wrapped.kind, kek, wrapping));
        result.rewrapped += 1;
      } catch (err) {
        if (!(err instanceof GovernedMemoryError && err.code === 'MEM_CONFLICT')) throw err;
        result.destroyedMeanwhile += 1;
      }
    }
    return result;
  }

  /** Drops every cached key (zeroing its bytes) and stops listening to the store. The store stays open. */
  close(): void {
    this.unsubscribe();
    this.pseudonymKey.key.fill(0);
    for (const entry of this.cache.values()) entry.key.key.fill(0);
    this.cache.clear();
  }

  private async kekById(kid: string, create = false): Promise<SecretKey> {
    const cached = this.cached(kid);
    if (cached !== undefined) return cached;
    const load = async (): Promise<SecretKey> => {
      // Without `create`, a data key names this KEK: it was stored first.
      const found = await this.store.get(kid, { named: !create });
      if (found.status === 'destroyed') throw destroyedError(kid);
      if (found.status === 'present') return this.remember(unwrapKey(found.wrapped, this.master(found.wrapped.wrappedBy)), undefined);
      if (!create) throw new CryptoError('KEY_MISSING', `KEK ${kid} is not in the key store`);
      const kek = generateKey(kid);
      await this.store.put(kid, wrapKey('kek', kek, this.master(this.activeMaster)));
      return this.remember(kek, undefined);
    };
    return create ? this.singleFlight(kid, load) : load();
  }

  /** Joins a get-or-create of `kid` already in flight instead of racing it with a second key. */
  private singleFlight(kid: string, run: () => Promise<SecretKey>): Promise<SecretKey> {
    const inflight = this.creating.get(kid);
    if (inflight !== undefined) return inflight;
    const started = run().finally(() => this.creating.delete(kid));
    this.creating.set(kid, started);
    return started;
  }

  private async unwrapDataKey(wrapped: WrappedKey): Promise<SecretKey> {
    if (wrapped.kind !== 'dk' || !isKekId(wrapped.wrappedBy)) {
      throw new CryptoError('AUTH_FAILED', `key ${wrapped.kid} is not a data key wrapped by a KEK`);
    }
    let kek: SecretKey;
    try {
      kek = await this.kekById(wrapped.wrappedBy);
    } catch (err) {
      if (isCryptoError(err, 'KEY_DESTROYED')) throw destroyedError(wrapped.kid, err);
      throw err;
    }
    return this.remember(unwrapKey(wrapped, kek), kek.kid);
  }

  private master(id: string): SecretKey {
    const key = this.masters.get(id);
    if (key === undefined) throw new CryptoError('MASTER_KEY_MISMATCH', `master key "${id}" is not configured`);
    return { kid: id, key };
  }

  private cached(kid: string): SecretKey | undefined {
    const entry = this.cache.get(kid);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > this.clock()) return entry.key;
    this.cache.delete(kid);
    return undefined;
  }

  private remember(key: SecretKey, parent: string | undefined): SecretKey {
    if (this.destroyed.has(key.kid) || (parent !== undefined && this.destroyed.has(parent))) {
      throw destroyedError(key.kid);
    }
    this.cache.delete(key.kid);
    this.cache.set(key.kid, { key, parent, expiresAt: this.clock() + this.ttlMs });
    // Maps iterate in insertion order: the first entries are the least recently cached.
    for (const id of this.cache.keys()) {
      if (this.cache.size <= this.maxCachedKeys) break;
      this.cache.delete(id);
    }
    return key;
  }

  private drop(kid: string): void {
    this.destroyed.add(kid);
    this.cache.delete(kid);
    for (const [id, entry] of this.cache) if (entry.parent === kid) this.cache.delete(id);
  }

  /** Cached keys, for tests and metrics (ids only). */
  cachedKeyIds(): string[] {
    return [...this.cache.keys()];
  }
}

function destroyedError(kid: string, cause?: unknown): CryptoError {
  const what = isKekId(kid) ? `KEK ${kid} (subject forgotten)` : `data key ${kid}`;
  return new CryptoError('KEY_DESTROYED', `${what} was destroyed: the content it protected is erased`, cause === undefined ? {} : { cause });
}
