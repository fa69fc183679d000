/**
 * POST /v1/memories:batch: many writes in one request, each passing or failing on its own with
 * the single write's rules and problem codes (@gm/write-edge admits them, sharing the policy
 * work), then one produce of every command (so one group commit) and one read-your-writes
 * wait per partition.
 */
import { GovernedMemoryError, type BatchItemOutcome, type CapabilityClaims } from '@gm/contracts';
import { admitWrites, writeAuthority, type PreparedWrite } from '@gm/write-edge';
import type { BrokerDeps } from './deps.ts';
import { problemOf, STATUS_OF } from './problem.ts';
import { postAsync, type WriteWait } from './write-preference.ts';
import { READ_YOUR_WRITES_GROUPS, STORED_GROUPS } from './command-gateway.ts';
import type { Positions } from './consistency-token.ts';

/** A batch body may be this many times MEMORY_BODY_LIMIT_BYTES: 500 items of a few KiB each. */
export const BATCH_BODY_LIMIT_FACTOR = 16;

/**
 * The batch's outcomes; synchronously (the default) with read-your-writes and where the events
 * landed (`stored`: waiting for the state store only), asynchronously (`async`) with where the
 * commands landed and each item's commandId (httpStatus 202) instead of its result.
 */
export async function writeBatch(
  deps: BrokerDeps, claims: CapabilityClaims, partitions: readonly string[], items: readonly unknown[], requestId: string, wait: WriteWait = 'searchable',
): Promise<{ items: BatchItemOutcome[]; readYourWrites?: boolean; landed?: Positions; commands?: Positions }> {
  const outcomes: Array<BatchItemOutcome | undefined> = new Array<BatchItemOutcome | undefined>(items.length);
  const failed = (index: number, err: GovernedMemoryError): void => {
    outcomes[index] = { index, httpStatus: STATUS_OF[err.code], error: problemOf(err.code, err.message, requestId) };
  };
  // In request order: writes of one subject reach write-admission in the order they were listed.
  const sending: Array<{ index: number; write: PreparedWrite }> = [];
  (await admitWrites(deps, claims, writeAuthority(deps.pdp, claims, partitions), items)).forEach((admitted, index) => {
    if (admitted.error !== undefined) failed(index, admitted.error);
    else sending.push({ index, write: admitted.write });
  });
  const answered = () => outcomes.filter((o): o is BatchItemOutcome => o !== undefined);
  if (sending.length === 0) return { items: answered(), readYourWrites: true, landed: new Map() };
  if (wait === 'async') {
    const commands = await postAsync(deps, claims, sending.map(({ write }) => write.command));
    for (const { index, write } of sending) outcomes[index] = { index, httpStatus: 202, commandId: write.command.metadata.commandId };
    return { items: answered(), commands };
  }
  const sent = await deps.gateway.sendAll(sending.map(({ write }) => write.command), wait === 'stored' ? STORED_GROUPS : READ_YOUR_WRITES_GROUPS);
  sent.outcomes.forEach((outcome, i) => {
    const entry = sending[i];
    if (entry === undefined) return;
    if (outcome instanceof GovernedMemoryError) return failed(entry.index, outcome);
    outcomes[entry.index] = { index: entry.index, httpStatus: 201, id: outcome.id ?? entry.write.id, version: outcome.version, status: outcome.status };
  });
  return { items: answered(), readYourWrites: sent.readYourWrites, landed: sent.landed };
}
