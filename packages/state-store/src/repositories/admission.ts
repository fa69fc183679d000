import type { KeyValueStore, KvWrite } from '../port.ts';
import type { KeySpace } from './keys.ts';

/** A subject's state as write-admission stored it, and the offset of memory.events it covers. */
export interface StoredAdmissionState {
  /** Every event of the subject before this offset of its memory.events partition is folded in. */
  version: number;
  state: unknown;
}

/** A stored state as loaded: `legacy` when it was found under its plain subject key (see load). */
export interface LoadedAdmissionState extends StoredAdmissionState {
  legacy?: true;
}

/**
 * write-admission's snapshots (§4: per-partition state, rebuilt from its own changelog): one
 * value per subject, and per partition a checkpoint — the offset of memory.events below which
 * every subject's stored state has folded every event. A restart folds only what lies past
 * the checkpoint and loads the other subjects when a command needs them.
 *
 * Writes never go back: a state or checkpoint is written only over an older one (a lower
 * `version`), so an instance that lost the partition and writes late can never overwrite a
 * newer owner's state. Any state folded from committed events is a true state of its subject
 * at its version, so whichever wins is correct.
 */
export class AdmissionSnapshots {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  async checkpoint(partition: number): Promise<number> {
    const raw = await this.kv.get(this.keys.admissionCheckpoint(partition));
    if (raw === null) return 0;
    const version = (JSON.parse(raw) as { version?: unknown }).version;
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
      throw new Error(`write-admission checkpoint of partition ${partition} is not an offset`);
    }
    return version;
  }

  /**
   * The stored states of these subjects, in order (undefined: never stored). `keys` are where
   * states are stored now, keyed pseudonyms of their subjects; `legacyKeys`, where the same
   * states were stored under the plain subject key before (read only when the first is missing,
   * and marked `legacy` so the next save moves them).
   */
  async load(keys: readonly string[], legacyKeys?: readonly string[]): Promise<Array<LoadedAdmissionState | undefined>> {
    if (keys.length === 0) return [];
    const raws: Array<string | null> = await this.kv.mget(keys.map(this.keys.admissionState));
    const missing = legacyKeys === undefined ? [] : raws.flatMap((raw, i) => (raw === null && legacyKeys[i] !== keys[i] ? [i] : []));
    const legacy = new Set(missing);
    if (missing.length > 0) {
      const old = await this.kv.mget(missing.map((i) => this.keys.admissionState(legacyKeys?.[i] ?? '')));
      missing.forEach((at, j) => {
        raws[at] = old[j] ?? null;
      });
    }
    return raws.map((raw, i) => {
      if (raw === null) return undefined;
      const parsed = JSON.parse(raw) as Partial<StoredAdmissionState>;
      if (typeof parsed.version !== 'number' || typeof parsed.state !== 'object' || parsed.state === null) {
        throw new Error(`write-admission state of subject #${i} of the batch is malformed`);
      }
      return { version: parsed.version, state: parsed.state, ...(legacy.has(i) ? { legacy: true } : {}) };
    });
  }

  /**
   * Of these records of a subject, those the stored state does not show purged yet: it may hold
   * their hash, provenance and the fingerprints of the writes that made them, or a flush may
   * still be about to store a state that does. A deletion's `key` target waits until none is
   * left before it makes the store's files forget deleted bytes (§8.4), so that the rewrite of
   * the snapshot is among what they forget. A state keeps every record it ever held, so a record
   * missing from it is one whose state is still to be stored.
   */
  async unpurged(key: string, recordIds: readonly string[], legacyKey?: string): Promise<string[]> {
    const [stored] = await this.load([key], legacyKey === undefined ? undefined : [legacyKey]);
    const records = (stored?.state as { records?: Record<string, { meta?: { status?: unknown } } | undefined> } | undefined)?.records ?? {};
    return recordIds.filter((id) => records[id]?.meta?.status !== 'purged');
  }

  /**
   * Stores the states, each folded through `version`, in one round trip; a newer one already
   * stored is kept. `movedFrom`: the legacy key the state was loaded from, removed in the same
   * round trip (its key names the subject in clear).
   */
  async saveStates(version: number, states: ReadonlyArray<{ key: string; state: unknown; movedFrom?: string }>): Promise<void> {
    if (states.length === 0) return;
    // `version` first: the compare-and-set reads it from the stored JSON.
    await this.kv.pipeline(states.flatMap(({ key, state, movedFrom }): KvWrite[] => [
      { op: 'setIfVersionAtLeast', key: this.keys.admissionState(key), value: JSON.stringify({ version, state }), version },
      ...(movedFrom === undefined ? [] : [{ op: 'del' as const, keys: [this.keys.admissionState(movedFrom)] }]),
    ]));
  }

  /** Moves the partition's checkpoint to `version` (never back); only after its states are stored. */
  async saveCheckpoint(partition: number, version: number): Promise<void> {
    await this.kv.setIfVersionAtLeast(this.keys.admissionCheckpoint(partition), JSON.stringify({ version }), version);
  }
}
