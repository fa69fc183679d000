/**
 * Every consumer group of the pipeline, by the name the bus commits its offsets under. One
 * place, because a group's progress is read by others (the edge waits for the projections
 * before it answers, the summaries wait for the index-builder, replay resets the vectors): a
 * name written twice could drift, and the wait would then watch a group nobody commits to.
 * The names are the offsets' identity on a running system: renaming one restarts that
 * consumer from the log's retention.
 */
export const CONSUMER_GROUPS = {
  /** memory.commands → decided events (services/write-admission). */
  writeAdmission: 'write-admission',
  /** memory.ingest → commands (services/ingest-gateway). */
  ingestGateway: 'ingest-gateway',
  /** memory.events → the record projections (services/projector). */
  projector: 'projector',
  /** policy.changes → the active policy (services/projector). */
  policyProjector: 'policy-projector',
  /** memory.events → the search index (services/index-builder). */
  indexBuilder: 'index-builder',
  /** memory.events → the scope summaries, one step behind the index-builder (services/index-builder). */
  summaryBuilder: 'summary-builder',
  /** memory.events → the vectors (services/vector-indexer). */
  vectorIndexer: 'vector-indexer',
  /** memory.events → the expiry schedule (services/expiry-scheduler). */
  expiryScheduler: 'expiry-scheduler',
  /** Deletion jobs: events, acks and policy changes (services/deletion-orchestrator). */
  deletionOrchestrator: 'deletion-orchestrator',
  /** deletion.tasks of the `verification` and `key` targets (services/receipt-verifier). */
  receiptVerifier: 'receipt-verifier',
  /** deletion.tasks of the `receipt` step (services/receipt-verifier). */
  receiptSigner: 'receipt-verifier.receipts',
  /** deletion.tasks of the `primary` target (services/projector). */
  primaryTarget: 'projector.deletion',
  /** deletion.tasks of the `keyword` and `summary` targets (services/index-builder). */
  indexTargets: 'index-builder.deletion',
  /** deletion.tasks of the `vector` target (services/vector-indexer). */
  vectorTargets: 'vector-indexer.deletion',
  /** deletion.tasks of the `retrieval_cache` and `evidence_packet` targets (services/retrieval-broker). */
  brokerTargets: 'retrieval-broker.deletion',
} as const;
export type ConsumerGroup = (typeof CONSUMER_GROUPS)[keyof typeof CONSUMER_GROUPS];
