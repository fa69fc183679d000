import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import { DeletionTask, TOPICS, type Clock, type ServiceHandle } from '@gm/contracts';
import { deletionAck } from '@gm/service-kit';
import type { SearchIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';

export const RECEIPT_VERIFIER_GROUP = 'receipt-verifier';

/**
 * Probes every copy this runtime keeps for the job's records and reports what it still
 * finds. Findings name the path and the record id only, never content. (The full replay
 * probes — exact phrase, paraphrase, summaries, a pre-deletion capability — and signed
 * receipts come with the verifiable-forgetting issue.)
 */
export async function probe(deps: { index: SearchIndex; state: StateStore }, task: DeletionTask): Promise<string[]> {
  const { index, state } = deps;
  const findings: string[] = [];
  const ids = task.recordIds;
  const tombstoned = await state.tombstones.filterTombstoned(task.tenantId, ids);
  const records = await state.records.getMany(task.tenantId, ids);
  for (const id of ids) {
    if (!tombstoned.has(id)) findings.push(`tombstone-missing:${id}`);
    const status = records.get(id)?.status;
    if (status === 'active' || status === 'quarantined') findings.push(`record-hash-live:${id}`);
    if (await index.get(task.tenantId, id)) findings.push(`index:${id}`);
    if (!task.retainPrimary && (await state.contents.count(task.tenantId, [id])) > 0) findings.push(`primary:${id}`);
  }
  for (const key of await state.cache.holding(task.tenantId, ids)) findings.push(`retrieval-cache:${key.slice(0, 16)}`);
  for (const packetId of await state.packets.holding(task.tenantId, ids)) findings.push(`evidence-packet:${packetId}`);
  return findings;
}

export async function startReceiptVerifier(deps: { bus: Bus; index: SearchIndex; state: StateStore; clock: Clock }): Promise<ServiceHandle> {
  const sub = await deps.bus.subscribe({
    groupId: RECEIPT_VERIFIER_GROUP,
    topics: [TOPICS.deletionTasks],
    handler: async (message: ConsumedMessage, ctx: ProcessContext) => {
      const task = DeletionTask.parse(message.value);
      if (task.target !== 'verification') return;
      const findings = await probe(deps, task);
      const ref = `probes=${task.recordIds.length * 4 + 2};findings=${findings.length}`;
      ctx.send([deletionAck(task, 'receipt-verifier', deps.clock, { ok: findings.length === 0, ref, findings })]);
    },
  });
  return { close: () => sub.close() };
}
