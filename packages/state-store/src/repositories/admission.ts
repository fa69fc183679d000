import type { KeyValueStore } from '../port.ts';
import type { KeySpace } from './keys.ts';

/** A subject's state as write-admission stored it, and the offset of memory.events it covers. */
export interface StoredAdmissionState {
  /** Every event of the subject before this offset of its memory.events partition is folded in. */
  version: number;
  state: unknown;
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

  /** The stored states of these subject keys, in order (undefined: never stored). */
  async load(subjectKeys: readonly string[]): Promise<Array<StoredAdmissionState | undefined>> {
    if (subjectKeys.length === 0) return [];
    const raws = await this.kv.mget(subjectKeys.map(this.keys.admissionState));
    return raws.map((raw, i) => {
      if (raw === null) return undefined;
      const parsed = JSON.parse(raw) as Partial<StoredAdmissionState>;
      if (typeof parsed.version !== 'number' || typeof parsed.state !== 'object' || parsed.state === null) {
        throw new Error(`write-admission state of subject #${i} of the batch is malformed`);
      }
      return parsed as StoredAdmissionState;
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
  async unpurged(subjectKey: string, recordIds: readonly string[]): Promise<string[]> {
    const [stored] = await this.load([subjectKey]);
    const records = (stored?.state as { records?: Record<string, { meta?: { status?: unknown } } | undefined> } | undefined)?.records ?? {};
    return recordIds.filter((id) => records[id]?.meta?.status !== 'purged');
  }

  /** Stores the states, each folded through `version`, in one round trip; a newer one already stored is kept. */
  async saveStates(version: number, states: ReadonlyArray<{ key: string; state: unknown }>): Promise<void> {
    if (states.length === 0) return;
    // `version` first: the compare-and-set reads it from the stored JSON.
    await this.kv.pipeline(states.map(({ key, state }) => ({
      op: 'setIfVersionAtLeast' as const, key: this.keys.admissionState(key), value: JSON.stringify({ version, state }), version,
    })));
  }

  /** Moves the partition's checkpoint to `version` (never back); only after its states are stored. */
  async saveCheckpoint(partition: number, version: number): Promise<void> {
    await this.kv.setIfVersionAtLeast(this.keys.admissionCheckpoint(partition), JSON.stringify({ version }), version);
  }
}
