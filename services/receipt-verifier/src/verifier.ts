import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import { CONSUMER_GROUPS, DeletionTask, TOPICS, deletionAck, type Clock, type ServiceHandle } from '@gm/contracts';
import { CedarPolicyDecisionPoint, RevisionCachedPolicySource, loadPolicySet, type CompiledPolicySet, type PolicyDecisionPoint } from '@gm/policy';
import type { SemanticLeg } from '@gm/retrieval';
import type { SearchIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import type { KeyStore, Keyring } from '@gm/crypto';
import { captureProbes } from './capture.ts';
import { commitContents } from './commitments.ts';
import { shredAndProve, type ErasableCopy } from './shredder.ts';
import { replay, replayRef, type ReplayReport, type SummaryProbeSource } from './replay.ts';

export const RECEIPT_VERIFIER_GROUP = CONSUMER_GROUPS.receiptVerifier;

export interface VerifierDeps {
  bus: Bus;
  index: SearchIndex;
  state: StateStore;
  clock: Clock;
  /** Decides the replayed reads, as the broker decides real ones. */
  pdp: PolicyDecisionPoint;
  /** The summaries store, where the deployment keeps one (its `holding` and `search`). */
  summaries?: SummaryProbeSource;
  /** The key store and keyring: the verifier runs the `key` target (crypto-shredding) too. */
  keys?: { keyring: Keyring; store: KeyStore };
  /** The vectors and the model, where the deployment keeps vectors: replays search them too. */
  semantic?: SemanticLeg;
  /** How long the `key` target asks the copies again while one still holds deleted bytes (default 0: once). */
  erasureWaitMs?: number;
}

/**
 * Verification replays (§8.3) for one task: rebuilds the deleted records' probes from the
 * event log (in this function's memory only), replays them on every read path and reports
 * what still answers. Findings name the path and the record id only, never content.
 */
export async function probe(deps: VerifierDeps, task: DeletionTask): Promise<{ report: ReplayReport; captured: number }> {
  const job = await deps.state.jobs.get(task.tenantId, task.jobId);
  const captured = await captureProbes(deps, task.tenantId, task.recordIds, job?.subjectId);
  // The receipt's commitments, while the log still tells each record's content hash (the record
  // hash drops it at the purge): never the hash itself, only what the requester can open (§8.4).
  await commitContents(deps.state, task.tenantId, task.jobId, new Map([...captured].map(([id, p]) => [id, p.meta.contentHash])));
  const report = await replay(deps, task, captured, deps.clock.now());
  return { report, captured: captured.size };
}

async function keyTargetDone(state: StateStore, task: DeletionTask): Promise<boolean> {
  const job = await state.jobs.get(task.tenantId, task.jobId);
  if (!job) return false;
  return job.status === 'verified' || job.status === 'failed' || job.evidence.some((e) => e.target === 'key');
}

/** Every copy outside the log this deployment keeps: the state store, the index, and the summaries and vectors where it keeps them. */
function erasableCopies(deps: VerifierDeps): ErasableCopy[] {
  const { summaries, semantic } = deps;
  return [
    { copy: 'index', eraseDeleted: (before) => deps.index.eraseDeleted(before) },
    ...(summaries ? [{ copy: 'summaries', eraseDeleted: (before: number) => summaries.eraseDeleted(before) }] : []),
    ...(semantic ? [{ copy: 'vectors', eraseDeleted: (before: number) => semantic.vectors.eraseDeleted(before) }] : []),
    // Last: Redis rewrites its files whole, so only once the others are through (shredder.ts).
    { copy: 'state', eraseDeleted: () => deps.state.kv.eraseDeleted(), rewritesAll: true },
  ];
}

export interface ReceiptVerifierOptions extends Omit<VerifierDeps, 'pdp'> {
  /** The deployment's Cedar policy set (loadPolicySet); the shipped one when absent. */
  policySet?: CompiledPolicySet;
}

export async function startReceiptVerifier(options: ReceiptVerifierOptions): Promise<ServiceHandle> {
  const { policySet, ...rest } = options;
  const pdp = new CedarPolicyDecisionPoint({
    source: new RevisionCachedPolicySource(rest.state.policies, rest.state.policyDecisions),
    clock: rest.clock,
    policySet: policySet ?? loadPolicySet(),
  });
  const deps: VerifierDeps = { ...rest, pdp };
  const sub = await deps.bus.subscribe({
    groupId: RECEIPT_VERIFIER_GROUP,
    topics: [TOPICS.deletionTasks],
    handler: async (message: ConsumedMessage, ctx: ProcessContext) => {
      const task = DeletionTask.parse(message.value);
      if (task.target === 'key') {
        // The orchestrator sends a task again when its job makes no progress (§8.1), and a
        // `key` task may wait half a minute for Elasticsearch's leases: a resend whose job
        // already holds the key's evidence is done, and is not done twice.
        if (await keyTargetDone(deps.state, task)) return;
        const outcome = deps.keys
          ? await shredAndProve({ bus: deps.bus, state: deps.state, keys: deps.keys, copies: erasableCopies(deps), erasureWaitMs: deps.erasureWaitMs }, task)
          : { ok: false, ref: 'this receipt-verifier holds no key store', findings: [] };
        ctx.send([deletionAck(task, 'receipt-verifier', deps.clock, outcome)]);
        return;
      }
      if (task.target !== 'verification') return;
      const { report, captured } = await probe(deps, task);
      const ok = report.findings.length === 0;
      ctx.send([deletionAck(task, 'receipt-verifier', deps.clock, {
        ok, ref: replayRef(report, captured), findings: report.findings, residual: report.residual,
      })]);
    },
  });
  return { close: () => sub.close() };
}
