/**
 * Write admission at the edge, one way for every way in: a single write, `:batch` and
 * memory.ingest each pass or fail item by item under the single write's rules and codes
 * (prepare-write.ts). The shared work is done once: one policy revision read, the PDP's
 * partitions (asked by the caller, per the authorization table), one pipeline of id claims.
 */
import { WriteMemoryBatchItem, isGovernedMemoryError, type CapabilityClaims, type GovernedMemoryError, type WriteMemoryRequest } from '@gm/contracts';
import { parseBody } from './parse.ts';
import { claimWriteIds } from './claim-ids.ts';
import { prepareWrite, type PreparedWrite, type WritePermission, type WriteEdgeDeps } from './prepare-write.ts';

/** An item's fate at the edge: its command, ready to send (its id claimed), or the coded error of the rule it broke. */
export type EdgeOutcome = { write: PreparedWrite; error?: never } | { error: GovernedMemoryError; write?: never };

/** A write as its way in parsed it: the request body and its idempotency key. */
type ParsedWrite = { body: WriteMemoryRequest; idempotencyKey: string | undefined };

/**
 * The edge's steps for every way in (single, batch, ingest): parse, prepare under the rules of a
 * single write, then claim the ids of those that passed, in one pipeline. Errors that are not
 * coded (bugs) are thrown; coded ones, dependency outages among them, are the item's: the caller
 * decides whether an outage fails the item (HTTP answers it 503) or the whole attempt (a
 * consumer retries it).
 */
async function admitEach<T>(
  deps: WriteEdgeDeps, claims: CapabilityClaims, mayWrite: WritePermission, items: readonly T[], parse: (item: T) => ParsedWrite,
): Promise<EdgeOutcome[]> {
  const revision = await deps.state.policyRevisions.current(claims.tenant);
  const outcomes = await Promise.all(items.map(async (item): Promise<EdgeOutcome> => {
    try {
      const { body, idempotencyKey } = parse(item);
      return { write: await prepareWrite(deps, claims, body, idempotencyKey, mayWrite, revision) };
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

/** Each item (a WriteMemoryBatchItem, unvalidated: `:batch` and memory.ingest) in input order. */
export function admitWrites(
  deps: WriteEdgeDeps, claims: CapabilityClaims, mayWrite: WritePermission, items: readonly unknown[],
): Promise<EdgeOutcome[]> {
  return admitEach(deps, claims, mayWrite, items, (item) => {
    const { idempotencyKey, ...body } = parseBody(WriteMemoryBatchItem, item);
    return { body: body satisfies WriteMemoryRequest, idempotencyKey };
  });
}

/** One write (`POST /v1/memories`, its body parsed) through the same steps; its refusal is thrown. */
export async function admitWrite(
  deps: WriteEdgeDeps, claims: CapabilityClaims, mayWrite: WritePermission, body: WriteMemoryRequest, idempotencyKey: string | undefined,
): Promise<PreparedWrite> {
  const [outcome] = await admitEach(deps, claims, mayWrite, [body], () => ({ body, idempotencyKey }));
  if (outcome === undefined) throw new Error('admitEach answered no outcome for one write');
  if (outcome.error !== undefined) throw outcome.error;
  return outcome.write;
}
