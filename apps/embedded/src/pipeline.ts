/**
 * The consumer services of the embedded runtime: everything but the HTTP edge (design §4).
 * They talk only through the bus and the stores, so they run the same in the HTTP thread or
 * in a worker thread of their own (pipeline-thread.ts) on their own connections to the files.
 */
import { meteredBus, tracedBus, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, type Clock, type ServiceHandle } from '@gm/contracts';
import { deletionTargetsOf } from '@gm/domain';
import type { Logger, Metrics } from '@gm/observability';
import type { CompiledPolicySet, SigningKeyPair } from '@gm/policy';
import { startWriteAdmission } from '@gm/write-admission';
import { startPolicyProjector, startPrimaryTarget, startProjector } from '@gm/projector';
import { startIndexBuilder, startIndexTargets, startSummaryBuilder } from '@gm/index-builder';
import { startExpiryScheduler } from '@gm/expiry-scheduler';
import { startDeletionOrchestrator } from '@gm/deletion-orchestrator';
import { startReceiptSigner, startReceiptVerifier } from '@gm/receipt-verifier';
import { periodic } from '@gm/time';
import { loadEmbeddingModel } from '@gm/embedding';
import type { SemanticLeg } from '@gm/retrieval';
import { startVectorIndexer, startVectorTargets } from '@gm/vector-indexer';
import { consumedAllCommands, keyringSnapshotSealer, sweepTransitKeys, type ContentRole } from '@gm/crypto';
import type { RuntimeConfig } from './config.ts';
import type { Stores } from './stores.ts';


export interface PipelineContext {
  stores: Stores;
  config: RuntimeConfig;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  policySet: CompiledPolicySet;
  receiptKeys: SigningKeyPair;
  /** See RuntimeOptions.plaintextLogForBenchmark. */
  plaintextLog: boolean;
}

/** A service's view of the log through its role (content-crypto.ts): the log itself holds only envelopes. */
export function logView(stores: Stores, role: ContentRole, plaintextLog: boolean): Bus {
  return plaintextLog ? stores.bus : stores.crypto.view(stores.bus, role);
}

/** Destroys the transit keys that are past; returns how many. */
export function transitKeySweep(stores: Stores, clock: Clock): () => Promise<number> {
  return () => sweepTransitKeys({
    keyring: stores.crypto.keyring, clock: () => clock.now().getTime(), consumedAll: () => consumedAllCommands(stores.bus, CONSUMER_GROUPS.writeAdmission),
  });
}

/**
 * Which of the consumer services a thread runs (MEMORY_PIPELINE=thread runs two threads):
 * - `write`: what a write waits for — write-admission, the projector, the index-builder — and
 *   the policy projector;
 * - `derived`: what follows writes on its own time — summaries, vectors, the expiry schedule,
 *   deletion (orchestrator, targets, verifier, signer) and the transit key sweep. A summary
 *   rebuild or an embedding batch then never holds up a projection a write is waiting for.
 * `all` is both, in one thread (MEMORY_PIPELINE=inline).
 */
export type PipelinePart = 'all' | 'write' | 'derived';

/** Starts the consumer services of `part`; close the handles in reverse order. */
export async function startPipeline(ctx: PipelineContext, part: PipelinePart = 'all'): Promise<ServiceHandle[]> {
  const { stores, config, clock, log, metrics, policySet } = ctx;
  const { index, vectors, summaries, state, crypto, keyStore } = stores;
  const bus = tracedBus(meteredBus(logView(stores, 'open', ctx.plaintextLog), metrics), 'gm_log');
  const redacted = tracedBus(meteredBus(logView(stores, 'redact', ctx.plaintextLog), metrics), 'gm_log');
  const handles: ServiceHandle[] = [];
  const child = (service: string) => log.child({ service });
  const write = part !== 'derived';
  const derived = part !== 'write';
  try {
    if (write) {
      handles.push(await startProjector({ bus, state, log: child('projector') }));
      handles.push(await startPolicyProjector({ bus, state, log: child('policy-projector') }));
      handles.push(await startIndexBuilder({ bus, index, state }));
    }
    if (derived) {
      // The model of this thread (apart from the one that embeds queries), on idle cores only:
      // under load the embeddings lag, not the work writes wait for (it took most of a core,
      // and at nice 10 still cost 8 writers a fifth of their writes; docs/pipeline.md).
      const semantic: SemanticLeg | undefined = config.semantic === undefined
        ? undefined
        : { vectors, model: await loadEmbeddingModel(config.semantic.modelDir, { priority: 'idle', shared: true }) };
      handles.push(await startPrimaryTarget({ bus, state, clock }));
      handles.push(await startSummaryBuilder({ bus, index, state, summaries }));
      handles.push(await startIndexTargets({ bus, index, clock, summaries: { store: summaries, state } }));
      if (semantic !== undefined) {
        // Its content is the decrypted event's; a promote carries none, so it is the record's stored content.
        handles.push(await startVectorIndexer({
          bus, vectors, model: semantic.model, contentOf: async (tenantId, recordId) => (await state.contents.get(tenantId, recordId)) ?? undefined,
          onRebuild: (stale) => child('vector-indexer').warn({ stale, modelId: semantic.model.modelId }, 'vectors of another model found: embedding every record again from the log'),
        }));
        handles.push(await startVectorTargets({ bus, vectors, clock }));
      }
      handles.push(await startExpiryScheduler({ bus: redacted, state, clock, log: child('expiry-scheduler'), tickMs: config.expiryTickMs }));
      handles.push(
        await startDeletionOrchestrator({
          bus: redacted, state, clock, log: child('deletion-orchestrator'), metrics, targets: deletionTargetsOf(config.semantic !== undefined),
          deadlineMs: config.deletionDeadlineMs, verifyRetryMs: config.deletionVerifyRetryMs, tickMs: 250,
        }),
      );
      handles.push(await startReceiptVerifier({
        bus, index, summaries, state, clock, policySet, keys: { keyring: crypto.keyring, store: keyStore }, ...(semantic === undefined ? {} : { semantic }),
      }));
      handles.push(await startReceiptSigner({ bus, state, clock, log: child('receipt-verifier'), metrics, keys: ctx.receiptKeys }));
      const sweep = transitKeySweep(stores, clock);
      handles.push(periodic(60_000, async () => {
        const count = await sweep();
        if (count > 0) log.info({ count }, 'transit keys destroyed');
      }, log, 'transit key sweep'));
    }
    if (write) {
      handles.push(
        await startWriteAdmission({
          bus, log: child('write-admission'), metrics, decide: { ttl: config.ttl, idempotencyWindowMs: config.idempotencyWindowMs },
          snapshots: {
            store: state.admission, intervalMs: config.admission.snapshotIntervalMs, maxEntries: config.admission.maxEntries,
            // The stored states' hashes sealed under each subject's key, so a forget takes them from every copy (§8.5).
            sealer: keyringSnapshotSealer(crypto.keyring),
          },
        }),
      );
    }
  } catch (err) {
    // A service that will not start (write-admission on another log's store) stops those before it.
    for (const h of handles.reverse()) await h.close().catch(() => undefined);
    throw err;
  }
  return handles;
}
