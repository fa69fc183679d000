import { ERASED_CONTENT_HASH, type MemoryEvent } from '@gm/contracts';
import type { SnapshotSealer, SubjectKeyRef } from '@gm/crypto';
import { draftOf, evolveDraft, initialState, type RecordState, type SubjectState } from '@gm/domain';
import type { AdmissionSnapshots } from '@gm/state-store';
import { z } from 'zod';

export interface CommittedStatesOptions {
  store: AdmissionSnapshots;
  /**
   * About how many records, idempotency slots and deferred events stay in memory. Past it, the
   * least recently used subjects whose state is stored are dropped after a flush; a command
   * loads them again.
   */
  maxEntries: number;
  onEvicted?: (key: string) => void;
  /**
   * Seals the records' content hashes and the request fingerprints of a stored state under the
   * subject's key (design §8.5): without it they are stored in clear (specs of the fold only).
   */
  sealer?: SnapshotSealer;
}

interface Entry {
  state: SubjectState;
  partition: number;
  /** Records plus idempotency slots, measured when the state was last loaded or stored. */
  size: number;
  /**
   * The stored version the state was loaded at (0: not loaded from the store). A stored state
   * may be ahead of the checkpoint (stored after it, by this or another owner): its events
   * below this offset are folded in already and must not be folded again.
   */
  loadedAt: number;
  /** Loaded from under its plain subject key (stored before keyed state keys): the next store moves it. */
  legacy?: boolean;
}

/** Events of a subject not in memory, past its stored state, in log order: folded in when it is loaded. */
type Deferred = Array<{ event: MemoryEvent; offset: number }>;

/** Serialised states per pipeline of a flush: about this many bytes of JSON. */
const FLUSH_CHUNK_BYTES = 4 * 2 ** 20;
/**
 * Subjects with deferred events loaded per read of the store while flushing, and reads per
 * partition and flush (unless it must load them all): small, because each read folds on the
 * event loop that commands wait for.
 */
const MATERIALIZE_CHUNK = 128;
const MATERIALIZE_ROUNDS = 4;

/**
 * write-admission's committed subject states: the fold of memory.events plus this instance's
 * committed results, kept partly in memory and wholly in the snapshot store.
 *
 * What holds, per partition p, with `covered(p)` the offset below which this instance has
 * every event of p: a subject in memory has folded every one of its events below
 * `covered(p)`; for a subject not in memory, its stored state plus its deferred events have
 * them all. So a subject is dropped from memory only once its state is stored and unchanged
 * since ("clean"), and a restart starts at the store's checkpoint with nothing in memory: the
 * events past the checkpoint are only deferred, and a subject pays for its own when a command
 * (or a flush) loads it.
 */
export class CommittedStates {
  /** In least-recently-used order, oldest first. */
  private readonly entries = new Map<string, Entry>();
  /** Per partition, per subject. */
  private readonly deferred = new Map<number, Map<string, Deferred>>();
  private deferredEvents = 0;
  /** Loads in flight: a second load of the same subject waits for the first (it takes the deferred events). */
  private readonly loading = new Map<string, Promise<SubjectState>>();
  private readonly dirty = new Map<number, Set<string>>();
  private readonly covered = new Map<number, number>();
  /** The checkpoint last stored per partition. */
  private readonly stored = new Map<number, number>();
  private total = 0;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly options: CommittedStatesOptions) {}

  /** Everything below `next` of the partition is folded in (or deferred). */
  advance(partition: number, next: number): void {
    if (next > (this.covered.get(partition) ?? 0)) this.covered.set(partition, next);
  }

  /**
   * Where a fold of the partition starts. Normally where this instance got to; but when the
   * store's checkpoint is further (another owner ran the partition and stored its states, or
   * this is a fresh start), what this instance holds of the partition may be stale, and the
   * store is complete below its checkpoint: the partition's subjects are dropped from memory
   * and the fold starts there. Offsets only grow, so a checkpoint past the partition's `end`
   * belongs to another log (a recreated topic beside a kept store): folding from it would skip
   * that log's events, so it is refused (checked where the end is known: at start). The end is
   * read after the checkpoint: another instance may commit and store a checkpoint at any time,
   * so an end read earlier could be behind a checkpoint of this very log.
   */
  async startPoint(partition: number, endNow: () => Promise<number> = async () => Number.POSITIVE_INFINITY): Promise<number> {
    const stored = await this.options.store.checkpoint(partition);
    const end = stored > 0 ? await endNow() : Number.POSITIVE_INFINITY;
    if (stored > end) {
      throw new Error(
        `write-admission: the stored checkpoint of memory.events partition ${partition} (${stored}) is past the partition's end (${end}): the state store belongs to another log; clear its admission keys (adm:*, adm-at:*)`,
      );
    }
    const mine = this.covered.get(partition);
    if (mine !== undefined && mine >= stored) return mine;
    for (const [key, entry] of this.entries) if (entry.partition === partition) this.forget(key, entry);
    for (const tail of this.deferred.get(partition)?.values() ?? []) this.deferredEvents -= tail.length;
    this.deferred.delete(partition);
    this.dirty.delete(partition);
    this.covered.set(partition, stored);
    this.stored.set(partition, stored);
    return stored;
  }

  /** The state in memory, if any (marks it recently used). */
  get(key: string): SubjectState | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.state;
  }

  /** Events of this subject below this offset are in its state already (see Entry.loadedAt). */
  foldedBelow(key: string): number {
    return this.entries.get(key)?.loadedAt ?? 0;
  }

  /** An event of a subject not in memory: folded in when the subject is loaded. */
  defer(key: string, partition: number, event: MemoryEvent, offset: number): void {
    let ofPartition = this.deferred.get(partition);
    if (ofPartition === undefined) this.deferred.set(partition, (ofPartition = new Map()));
    let tail = ofPartition.get(key);
    if (tail === undefined) ofPartition.set(key, (tail = []));
    tail.push({ event, offset });
    this.deferredEvents += 1;
  }

  get deferredCount(): number {
    return this.deferredEvents;
  }

  /** The committed state of a subject of `partition`: memory, else the store (plus deferred events), else a new subject. */
  async load(key: string, partition: number): Promise<SubjectState> {
    return (await this.loadMany([key], partition)).get(key) ?? initialState();
  }

  /** `load` for many subjects of one partition, with one read of the store for all those not in memory. */
  async loadMany(keys: Iterable<string>, partition: number): Promise<Map<string, SubjectState>> {
    const found = new Map<string, SubjectState>();
    const missing: string[] = [];
    const waits: Array<Promise<void>> = [];
    for (const key of new Set(keys)) {
      const state = this.get(key);
      const inFlight = this.loading.get(key);
      if (state !== undefined) found.set(key, state);
      else if (inFlight !== undefined) waits.push(inFlight.then((s) => void found.set(key, s)));
      else missing.push(key);
    }
    if (missing.length > 0) {
      const read = this.read(missing, partition);
      missing.forEach((key) => {
        const loaded = read.then((states) => states.get(key) ?? initialState());
        // A failed read is this call's to throw; a second load waiting on it gets it too, and nobody else.
        loaded.catch(() => undefined);
        this.loading.set(key, loaded);
      });
      try {
        for (const [key, state] of await read) found.set(key, state);
      } finally {
        for (const key of missing) this.loading.delete(key);
      }
    }
    await Promise.all(waits);
    return found;
  }

  private async read(keys: string[], partition: number): Promise<Map<string, SubjectState>> {
    const stored = await this.options.store.load(keys.map(this.stateKey), keys);
    const restored = await Promise.all(stored.map((value, i) => (value === undefined ? undefined : this.restore(keys[i] ?? '', value.state))));
    const states = new Map<string, SubjectState>();
    // One synchronous block: the deferred events are taken together with the insertion.
    keys.forEach((key, i) => {
      const held = this.entries.get(key);
      if (held !== undefined) return void states.set(key, held.state);
      const value = stored[i];
      let state = restored[i] ?? initialState();
      const size = sizeOf(state);
      const loadedAt = value?.version ?? 0;
      this.entries.set(key, { state, partition, size, loadedAt, ...(value?.legacy === true ? { legacy: true } : {}) });
      this.total += size;
      const tail = this.deferred.get(partition)?.get(key);
      if (tail !== undefined) {
        state = draftOf(state);
        for (const { event, offset } of tail) {
          if (offset < loadedAt) continue;
          evolveDraft(state, event);
          markPendingContent(state, event, offset);
        }
        this.deferred.get(partition)?.delete(key);
        this.deferredEvents -= tail.length;
        this.set(key, partition, state);
      }
      states.set(key, state);
    });
    return states;
  }

  /** A committed change: the state is the subject's new committed state, stored at the next flush. */
  set(key: string, partition: number, state: SubjectState): void {
    const entry = this.entries.get(key);
    if (entry === undefined) {
      this.entries.set(key, { state, partition, size: 0, loadedAt: 0 });
    } else {
      entry.state = state;
      entry.partition = partition;
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    this.markDirty(partition, [key]);
  }

  /** How many records, slots and deferred events are in memory (states as last measured). */
  get size(): number {
    return this.total + this.deferredEvents;
  }

  /**
   * Stores every changed state and then each partition's checkpoint, then drops clean
   * subjects past `maxEntries`. Subjects with deferred events are loaded and stored too, a
   * bounded number per flush unless `all`; the checkpoint stays below the oldest event still
   * deferred. One flush at a time; a call during a flush runs after it.
   */
  flush(options: { all?: boolean } = {}): Promise<void> {
    const run = this.flushing.then(() => this.flushOnce(options.all === true));
    this.flushing = run.catch(() => undefined);
    return run;
  }

  private async flushOnce(all: boolean): Promise<void> {
    for (const [partition, version] of this.covered) {
      let rounds = 0;
      do {
        const deferred = [...(this.deferred.get(partition)?.keys() ?? [])].slice(0, MATERIALIZE_CHUNK);
        if (deferred.length > 0) await this.loadMany(deferred, partition);
        await this.storeDirty(partition);
        this.evict();
        rounds += 1;
      } while ((all || rounds < MATERIALIZE_ROUNDS) && (this.deferred.get(partition)?.size ?? 0) > 0);
      // Below the oldest event still deferred, the store has everything.
      let checkpoint = version;
      for (const tail of this.deferred.get(partition)?.values() ?? []) {
        const first = tail[0];
        if (first !== undefined && first.offset < checkpoint) checkpoint = first.offset;
      }
      if ((this.stored.get(partition) ?? 0) >= checkpoint) continue;
      await this.options.store.saveCheckpoint(partition, checkpoint);
      this.stored.set(partition, checkpoint);
    }
    this.evict();
  }

  private async storeDirty(partition: number): Promise<void> {
    const keys = this.dirty.get(partition);
    if (keys === undefined || keys.size === 0) return;
    // Taken in this turn: each state has exactly the events below `version` (held states move
    // together with `covered`); changes from here on mark their subjects dirty again.
    const version = this.covered.get(partition) ?? 0;
    this.dirty.delete(partition);
    const sealing = this.options.sealer !== undefined;
    const taken = [...keys].flatMap((key) => {
      const entry = this.entries.get(key);
      return entry === undefined ? [] : [{ key, entry, ...toStored(entry.state, sealing), generation: entry.state.keyGeneration ?? 1, size: sizeOf(entry.state) }];
    });
    try {
      for (const chunk of chunks(taken)) {
        const states = await Promise.all(chunk.map(async ({ key, entry, json, hashes, generation }) => ({
          key: this.stateKey(key), state: await this.sealed(key, json, hashes, generation), ...(entry.legacy === true ? { movedFrom: key } : {}),
        })));
        await this.options.store.saveStates(version, states);
        for (const { entry } of chunk) delete entry.legacy;
      }
    } catch (err) {
      this.markDirty(partition, keys);
      throw err;
    }
    for (const { entry, size } of taken) {
      this.total += size - entry.size;
      entry.size = size;
    }
  }

  /**
   * Where the store keeps a subject's state: under a keyed pseudonym of the subject when states
   * are sealed (docs/security.md), else (specs of the fold only) under the subject key itself.
   */
  private stateKey = (key: string): string => this.options.sealer?.storageKey(keyRefOf(key, 1)) ?? key;

  /** The stored value: the state, and what it must not hold in clear sealed beside it. */
  private async sealed(key: string, json: SubjectState, hashes: SealedHashes | undefined, generation: number): Promise<unknown> {
    const { sealer } = this.options;
    if (sealer === undefined || hashes === undefined) return json;
    const envelope = await sealer.seal(keyRefOf(key, generation), JSON.stringify(hashes));
    return { ...json, sealedHashes: { generation, envelope } };
  }

  /**
   * A stored state as the decider holds it: its sealed hashes opened and put back. Once the
   * subject's key of their generation is destroyed (a forget) they stay erased: every record they
   * were of is forgotten.
   */
  private async restore(key: string, value: unknown): Promise<SubjectState> {
    const state = fromStored(value);
    const sealed = (value as { sealedHashes?: unknown }).sealedHashes;
    if (sealed === undefined) return state;
    const parsed = SealedPart.safeParse(sealed);
    if (!parsed.success) throw new Error('a stored write-admission state has a malformed sealed part');
    if (this.options.sealer === undefined) throw new Error('a stored write-admission state is sealed, and this instance holds no keys to open it');
    const plaintext = await this.options.sealer.open(keyRefOf(key, parsed.data.generation), parsed.data.envelope);
    if (plaintext === undefined) return state;
    const hashes = SealedHashes.parse(JSON.parse(plaintext));
    for (const [id, contentHash] of Object.entries(hashes.records)) {
      const record = state.records[id];
      if (record !== undefined) state.records[id] = { ...record, meta: { ...record.meta, contentHash } };
    }
    for (const [slot, requestHash] of Object.entries(hashes.slots)) {
      const entry = state.idempotency[slot];
      if (entry !== undefined) state.idempotency[slot] = { ...entry, requestHash };
    }
    return state;
  }

  private markDirty(partition: number, keys: Iterable<string>): void {
    let dirty = this.dirty.get(partition);
    if (dirty === undefined) this.dirty.set(partition, (dirty = new Set()));
    for (const key of keys) dirty.add(key);
  }

  private evict(): void {
    if (this.size <= this.options.maxEntries) return;
    for (const [key, entry] of this.entries) {
      if (this.size <= this.options.maxEntries) break;
      if (this.dirty.get(entry.partition)?.has(key) === true) continue;
      this.forget(key, entry);
    }
  }

  private forget(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.total -= entry.size;
    this.options.onEvicted?.(key);
  }

}

/**
 * Notes where a quarantined write's content lies in the log (RecordState.pendingAt). In place:
 * the record object is the one this event created, shared only by states that hold exactly
 * this version of the record, for all of which the position is true.
 */
export function markPendingContent(state: SubjectState, event: MemoryEvent, offset: number): void {
  if (event.type !== 'MemoryWritten') return;
  const record = state.records[event.data.record.id];
  if (record?.pendingContent !== undefined && record.meta.version === event.data.record.version) record.pendingAt = offset;
}

const sizeOf = (state: SubjectState): number => Object.keys(state.records).length + Object.keys(state.idempotency).length;

function* chunks<T extends { size: number }>(items: T[]): Generator<T[]> {
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    chunk.push(item);
    // A cheap estimate: a record or a slot serialises to a few hundred bytes.
    bytes += 256 * item.size;
    if (bytes >= FLUSH_CHUNK_BYTES) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
  }
  if (chunk.length > 0) yield chunk;
}

/** What a stored state seals (JSON, in the sealed part): per record its content hash, per idempotency slot its request fingerprint. */
const SealedHashes = z.object({ records: z.record(z.string(), z.string()), slots: z.record(z.string(), z.string()) }).strict();
type SealedHashes = z.infer<typeof SealedHashes>;
const SealedPart = z.object({ generation: z.number().int().min(1), envelope: z.unknown() }).strict();

/** A subject key is `tenant/subject` (contracts' subjectKey); tenant ids hold no `/`. */
function keyRefOf(key: string, kekGeneration: number): SubjectKeyRef {
  const at = key.indexOf('/');
  return { tenantId: key.slice(0, at), subjectId: key.slice(at + 1), kekGeneration };
}

/**
 * The stored form: quarantined content stays in the log (memory.events, sealed there), so the
 * store never holds a copy a deletion would have to find; `pendingAt` says where it is. When
 * `sealing`, the content hashes and request fingerprints are taken out (a plain hash of content
 * is content, design §8.5) and returned apart, to be sealed under the subject's key: the stored
 * records keep ERASED_CONTENT_HASH, the slots no fingerprint. Taken in one synchronous pass, so
 * the hashes are those of the state at its version.
 */
function toStored(state: SubjectState, sealing: boolean): { json: SubjectState; hashes: SealedHashes | undefined } {
  const records: Record<string, RecordState> = {};
  const hashes: SealedHashes = { records: {}, slots: {} };
  for (const [id, record] of Object.entries(state.records)) {
    let stored = record;
    if (record.pendingContent !== undefined) {
      if (record.pendingAt === undefined) throw new Error(`quarantined record ${id} has no log position for its content`);
      const { pendingContent: _content, ...rest } = record;
      stored = rest;
    }
    if (sealing && stored.meta.contentHash !== ERASED_CONTENT_HASH) {
      hashes.records[id] = stored.meta.contentHash;
      stored = { ...stored, meta: { ...stored.meta, contentHash: ERASED_CONTENT_HASH } };
    }
    records[id] = stored;
  }
  let idempotency = state.idempotency;
  if (sealing) {
    idempotency = {};
    for (const [slot, entry] of Object.entries(state.idempotency)) {
      if (entry.requestHash === undefined) {
        idempotency[slot] = entry;
        continue;
      }
      hashes.slots[slot] = entry.requestHash;
      const { requestHash: _sealed, ...rest } = entry;
      idempotency[slot] = rest;
    }
  }
  const empty = Object.keys(hashes.records).length === 0 && Object.keys(hashes.slots).length === 0;
  return { json: { ...state, records, idempotency }, hashes: empty ? undefined : hashes };
}

function fromStored(value: unknown): SubjectState {
  const state = value as Partial<SubjectState>;
  if (typeof state.records !== 'object' || state.records === null || typeof state.idempotency !== 'object' || state.idempotency === null) {
    throw new Error('a stored write-admission state is malformed');
  }
  const restored: SubjectState = { records: state.records, idempotency: state.idempotency };
  if (typeof state.keyGeneration === 'number') restored.keyGeneration = state.keyGeneration;
  return restored;
}
