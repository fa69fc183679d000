/**
 * Many writes of one capability admitted at once, each passing or failing on its own with the
 * single write's rules and codes (prepare-write.ts). The shared work is done once: one policy
 * revision read, the PDP's partitions (asked by the caller, per the authorization table), one
 * pipeline of id claims.
 */
import { WriteMemoryBatchItem, isGovernedMemoryError, type CapabilityClaims, type GovernedMemoryError, type WriteMemoryRequest } from '@gm/contracts';
import { parseBody } from './parse.ts';
import { claimWriteIds } from './claim-ids.ts';
import { prepareWrite, type PreparedWrite, type WritePermission, type WriteEdgeDeps } from './prepare-write.ts';

/** An item's fate at the edge: its command, ready to send (its id claimed), or the coded error of the rule it broke. */
export type EdgeOutcome = { write: PreparedWrite; error?: never } | { error: GovernedMemoryError; write?: never };

/**
 * Each item (a WriteMemoryBatchItem, unvalidated) in input order. Errors that are not coded
 * (bugs) are thrown; coded ones, dependency outages among them, are the item's: the caller
 * decides whether an outage fails the item (HTTP answers it 503) or the whole attempt (a
 * consumer retries it).
 */
export async function admitWrites(
  deps: WriteEdgeDeps, claims: CapabilityClaims, mayWrite: WritePermission, items: readonly unknown[],
): Promise<EdgeOutcome[]> {
  const revision = await deps.state.policyRevisions.current(claims.tenant);
  const outcomes = await Promise.all(items.map(async (item): Promise<EdgeOutcome> => {
    try {
      const { idempotencyKey, ...body } = parseBody(WriteMemoryBatchItem, item);
      return { write: await prepareWrite(deps, claims, body satisfies WriteMemoryRequest, idempotencyKey, mayWrite, revision) };
    } catch (err) {
      if (!isGovernedMemoryError(err)) throw err;
      return { error: err };
    }
  }));
  const prepared = outcomes.flatMap((o) => (o.write === undefined ? [] : [o.write]));
  if (prepared.length === 0) return outcomes;
  const refusals = await claimWriteIds(deps, claims, prepared, mayWrite);
  let next = 0;
  return outcomes.map((o) => {
    if (o.write === undefined) return o;
    const refusal = refusals[next++];
    return refusal === undefined ? o : { error: refusal };
  });
}
