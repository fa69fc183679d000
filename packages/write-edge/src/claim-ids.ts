/**
 * Id claims at the edge of a write (§5.10): a client-chosen id is claimed per tenant for one
 * subject. An id the writer may not act on — held by another subject, in a partition it may not
 * write to, tombstoned, deleted or purged — answers one uniform MEM_ID_TAKEN, whatever subject or
 * state holds it, so the write path tells nobody which subject an id was about or what became of
 * it. What remains observable is only that the id is taken (generated ids are unguessable).
 */
import { GovernedMemoryError, type CapabilityClaims } from '@gm/contracts';
import { isLive, recordPartition } from '@gm/domain';
import type { StateStore } from '@gm/state-store';
import type { PreparedWrite, WritePermission } from './prepare-write.ts';

/** The one answer for an id this writer may not use; byte-identical whatever holds it. */
export const idTaken = (): GovernedMemoryError => new GovernedMemoryError('MEM_ID_TAKEN', 'this id is not available to this writer');

/**
 * The one answer for a `supersedesId` this writer may not act on — another subject's, in a
 * partition it may not write to, deleted, or never written — the decider's own answer for a
 * missing target, so a correction tells nobody which subject an id was about.
 */
export const supersededNotFound = (): GovernedMemoryError => new GovernedMemoryError('MEM_NOT_FOUND', 'the superseded memory does not exist');

export type IdClaimDeps = { state: Pick<StateStore, 'idClaims' | 'records' | 'tombstones'> };

/**
 * Claims each write's id for its subject; for each, true when the write may go on to
 * write-admission, false when it must be answered `idTaken()`. One read of the records, one of
 * their tombstones and one pipeline of claims for the whole list.
 */
export async function claimWriteIds(
  deps: IdClaimDeps, claims: CapabilityClaims, writes: readonly PreparedWrite[], mayWrite: WritePermission,
): Promise<Array<GovernedMemoryError | undefined>> {
  if (writes.length === 0) return [];
  const targets = writes.map((w) => w.command.data.supersedesId);
  const ids = [...new Set([...writes.map((w) => w.id), ...targets.filter((t): t is string => t !== undefined)])];
  const [metas, tombstoned] = await Promise.all([
    deps.state.records.getMany(claims.tenant, ids),
    deps.state.tombstones.filterTombstoned(claims.tenant, ids),
  ]);
  /** Whether this writer may act on the record of `id` (absent: nothing to hide). */
  const actsOn = async (id: string, subjectId: string): Promise<boolean> => {
    const meta = metas.get(id);
    return meta !== undefined && meta.subjectId === subjectId && isLive(meta.status) && !tombstoned.has(id) && (await mayWrite(recordPartition(meta)));
  };
  const refusals = await Promise.all(writes.map(async (w, i): Promise<GovernedMemoryError | undefined> => {
    const meta = metas.get(w.id);
    if (meta !== undefined && !(isLive(meta.status) && !tombstoned.has(w.id) && (await mayWrite(recordPartition(meta))))) return idTaken();
    const target = targets[i];
    if (target !== undefined && !(await actsOn(target, w.subjectId))) return supersededNotFound();
    return undefined;
  }));
  const claiming = writes.filter((_, i) => refusals[i] === undefined);
  const claimed = await deps.state.idClaims.claimAll(claims.tenant, claiming.map((w) => ({ id: w.id, subjectId: w.subjectId })));
  let next = 0;
  return refusals.map((refusal) => refusal ?? (claimed[next++] === true ? undefined : idTaken()));
}
