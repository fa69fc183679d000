import { setTimeout as delay } from 'node:timers/promises';
import type { Bus } from '@gm/bus';
import { ERASED_CONTENT, GovernedMemoryError, TOPICS, readMemoryEvent, subjectKey, type CopyErasureState, type DeletionTask } from '@gm/contracts';
import { keyringSnapshotSealer, shredRecords, type KeyStore, type Keyring, type ShredResult } from '@gm/crypto';
import type { StateStore } from '@gm/state-store';

export interface ShredderDeps {
  /** The verifier's view of the bus: it opens content, so an event that still decrypts shows. */
  bus: Bus;
  state: StateStore;
  keys: { keyring: Keyring; store: KeyStore };
  /** The copies outside the log (state store, indexes): each makes its deleted bytes physically gone where it can, and says what is true. */
  copies: ReadonlyArray<ErasableCopy>;
  /** How long one attempt waits for write-admission's snapshot of the subject (default SNAPSHOT_WAIT_MS). */
  snapshotWaitMs?: number;
  /** How long after its task the `key` target is retried while a copy still holds deleted bytes (default 0: never). */
  erasureWaitMs?: number;
}

/** How long one attempt of the `key` target waits for write-admission's snapshot before the bus retries the task. */
export const SNAPSHOT_WAIT_MS = 5_000;

/** What the `key` target leaves of a job's deadline after waiting for the copies: the shredding, the replay proof, the receipt. */
export const DEADLINE_MARGIN_MS = 15_000;

/**
 * Waits until write-admission's stored state of the subject holds none of the records unpurged
 * (it stores a subject's state as soon as a purge of it commits); throws MEM_UNAVAILABLE, which
 * the bus retries, when it has not after `timeoutMs`. Polls the store: the state is its only
 * witness, and write-admission may run in another process.
 */
export async function awaitSnapshotPurged(
  state: StateStore, at: { key: string; legacyKey: string }, recordIds: string[], timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 2; ; pause = Math.min(2 * pause, 100)) {
    if ((await state.admission.unpurged(at.key, recordIds, at.legacyKey)).length === 0) return;
    if (Date.now() >= deadline) {
      throw new GovernedMemoryError('MEM_UNAVAILABLE', 'write-admission has not stored the purged state of the subject yet', { retriable: true });
    }
    await delay(pause);
  }
}

/** A store holding copies of content, and how it erases what its deletion targets removed. */
export interface ErasableCopy {
  copy: string;
  /** Erases what was deleted before `deletedBefore` (epoch ms), or says why not yet. */
  eraseDeleted(deletedBefore: number): Promise<CopyErasureState>;
  /** It erases by rewriting the whole store (Redis's files): asked once, after every other copy. */
  rewritesAll?: boolean;
}

/** Until when (epoch ms) the `key` target waits for the copies: `waitMs` after its task, and never into the job's last DEADLINE_MARGIN_MS. */
export function erasureWaitUntil(issuedAt: number, waitMs: number, deadline: number): number {
  return waitMs > 0 ? Math.min(issuedAt + waitMs, deadline - DEADLINE_MARGIN_MS) : issuedAt;
}

/**
 * What the targets deleted leaves the stores' files (§8.4). Every target acked before the `key`
 * task was issued, so its time bounds the deletions. While a copy still holds them (an
 * Elasticsearch retention lease not yet moved on) and the wait has not run out, the attempt
 * fails with MEM_UNAVAILABLE and the bus retries the task after a back-off: a handler that
 * blocked for the lease would look stalled to its group. Nothing is destroyed before this.
 */
export async function eraseCopies(copies: readonly ErasableCopy[], deletedBefore: number, waitUntil: number): Promise<string[]> {
  const erase = (c: ErasableCopy) => c.eraseDeleted(deletedBefore).then((state) => `${c.copy}:${state}`);
  const first = await Promise.all(copies.filter((c) => c.rewritesAll !== true).map(erase));
  if (Date.now() < waitUntil && first.some((c) => !c.endsWith(':erased'))) {
    throw new GovernedMemoryError('MEM_UNAVAILABLE', `a copy still holds deleted documents (${first.join(',')}); asking again`, { retriable: true });
  }
  return [...first, ...await Promise.all(copies.filter((c) => c.rewritesAll === true).map(erase))];
}

export interface ErasureProof {
  /** Events of the records that carried content. */
  events: number;
  /** Of those, how many no longer decrypt (their key is destroyed). */
  undecryptable: number;
}

/**
 * The `key` target (§8.5): destroys the records' keys, then reads every event of theirs in
 * memory.events back through the same decrypting path every service uses and counts what still
 * opens. Done only when nothing does. Runs after the replays, which needed the content.
 */
export async function shredAndProve(deps: ShredderDeps, task: DeletionTask): Promise<{ ok: boolean; ref: string; findings: string[] }> {
  const job = await deps.state.jobs.get(task.tenantId, task.jobId);
  if (!job) return { ok: false, ref: 'job not found', findings: [] };
  // write-admission's snapshot of the subject is rewritten after the purge (it held the records'
  // hashes and provenance): that write must be among what the files forget below, not land after
  // it. First, so that an attempt which waited in vain has destroyed nothing yet.
  const subject = { tenantId: task.tenantId, subjectId: job.subjectId };
  const stateAt = { key: keyringSnapshotSealer(deps.keys.keyring).storageKey(subject), legacyKey: subjectKey(task.tenantId, job.subjectId) };
  await awaitSnapshotPurged(deps.state, stateAt, task.recordIds, deps.snapshotWaitMs ?? SNAPSHOT_WAIT_MS);
  // The wait ends early enough for the job to finish before its deadline: a receipt saying
  // `pending_compaction` for a copy is true, where a job failed for a lease that had not moved
  // yet would tell compliance that an erasure failed.
  const issuedAt = Date.parse(task.issuedAt);
  const copies = await eraseCopies(deps.copies, issuedAt, erasureWaitUntil(issuedAt, deps.erasureWaitMs ?? 0, Date.parse(job.deadline)));
  const shred: ShredResult = await shredRecords(deps.keys.keyring, deps.keys.store, {
    tenantId: task.tenantId, recordIds: task.recordIds, subjectKeys: job.mode === 'forget',
  });
  const { proof, readable } = await proveErased(deps.bus, task.tenantId, job.subjectId, task.recordIds);
  // key_residue: none = no copy of the destroyed keys left in the key store's files (SQLite,
  // after `checkpoints` WAL checkpoints); until_compaction = memory.keys still holds the old
  // records until compaction (design §8.5).
  const ref = `data_keys=${shred.dataKeys};keks=${shred.keks};keks_kept=${shred.keksKept};events=${proof.events};undecryptable=${proof.undecryptable}`
    + `;key_residue=${shred.keyResidue}${shred.keyResidue === 'none' ? `;wal_checkpoints=${shred.checkpoints}` : ''}`
    + `;copies=${copies.join(',')}`;
  return { ok: readable.length === 0, ref, findings: readable.map((id) => `event_log_readable:${id}`) };
}

/** Reads the subject's partition of memory.events; ids of records whose content still reads. */
export async function proveErased(
  bus: Bus, tenantId: string, subjectId: string, recordIds: string[],
): Promise<{ proof: ErasureProof; readable: string[] }> {
  const wanted = new Set(recordIds);
  const key = subjectKey(tenantId, subjectId);
  const partition = bus.partitionFor(TOPICS.events, key);
  const proof: ErasureProof = { events: 0, undecryptable: 0 };
  const readable = new Set<string>();
  const check = (id: string, content: string | undefined) => {
    if (content === undefined || !wanted.has(id)) return;
    proof.events += 1;
    if (content === ERASED_CONTENT) proof.undecryptable += 1;
    else readable.add(id);
  };
  // The subject's own events (an id is claimed for one subject, §5.10): the others' stay unopened.
  for await (const message of bus.readPartition(TOPICS.events, partition, 0, { keys: new Set([key]) })) {
    const event = readMemoryEvent(message);
    if (event.metadata.tenantId !== tenantId) continue;
    if (event.type === 'MemoryWritten') check(event.data.record.id, event.data.record.content);
    else if (event.type === 'MemoryPromoted') check(event.data.id, event.data.content);
  }
  return { proof, readable: [...readable] };
}
