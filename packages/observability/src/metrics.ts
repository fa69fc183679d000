import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/** How long a scrape waits for the readiness checks before it reports not ready. */
const READINESS_CHECK_MS = 1_000;

/** `promise`'s answer, or false once `ms` passed. */
function withinMs(promise: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** One consumer group's lag on one partition: messages in the log past its committed offset. */
export interface ConsumerLag {
  group: string;
  topic: string;
  partition: number;
  lag: number;
}

/** A registry's metrics as plain data: what crosses a thread boundary to be merged. */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/**
 * The metrics of §10; one registry per runtime so tests can start several. `processMetrics`
 * (default on) adds the process's own (memory, CPU, event loop): one registry per process
 * should carry them, so a second thread's registry leaves them out.
 */
export function createMetrics(options: { processMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const counter = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name, help, labelNames, registers: [registry] });
  /** Asked at every scrape: each reports the lag of the consumer groups it knows (see meteredBus in @gm/bus). */
  const lagSources = new Set<() => Promise<ConsumerLag[]>>();
  new Gauge({
    name: 'gm_consumer_lag', help: 'Messages in the log past a consumer group\'s committed offset', labelNames: ['group', 'topic', 'partition'], registers: [registry],
    async collect() {
      this.reset();
      const reports = await Promise.all([...lagSources].map((source) => source().catch(() => [])));
      for (const { group, topic, partition, lag } of reports.flat()) this.set({ group, topic, partition: String(partition) }, lag);
    },
  });
  /** Asked at every scrape: the process's readiness checks (what /readyz answers). Registered with the first check: a registry without one has no gm_ready. */
  const readinessChecks = new Set<() => Promise<boolean>>();
  const readiness = new Gauge({
    name: 'gm_ready', help: '1 when every dependency of this process answers (what /readyz says), else 0', registers: [],
    async collect() {
      // A check that hangs (an engine half away) must not hold the scrape, and with it every other series.
      const answers = await Promise.all([...readinessChecks].map((check) => withinMs(check().catch(() => false), READINESS_CHECK_MS)));
      this.set(answers.every(Boolean) ? 1 : 0);
    },
  });
  const addReadinessCheck = (check: () => Promise<boolean>): void => {
    if (readinessChecks.size === 0) registry.registerMetric(readiness);
    readinessChecks.add(check);
  };
  return {
    registry,
    lagSources,
    addReadinessCheck,
    writes: counter('gm_writes_total', 'Memory writes admitted', ['status']),
    rejections: counter('gm_commands_rejected_total', 'Commands rejected by write-admission', ['code']),
    quarantines: counter('gm_quarantines_total', 'Writes quarantined as untrusted'),
    promotions: counter('gm_promotions_total', 'Quarantined or narrowed memories promoted'),
    conflicts: counter('gm_conflicts_total', 'Optimistic-concurrency conflicts'),
    expirations: counter('gm_expirations_total', 'Memories expired'),
    supersessions: counter('gm_supersessions_total', 'Memories superseded by a correction'),
    revocations: counter('gm_revocations_total', 'Record revocations and deletions requested', ['mode']),
    forgets: counter('gm_forgets_total', 'Subjects forgotten'),
    deletionJobs: counter('gm_deletion_jobs_total', 'Deletion jobs by final status', ['status']),
    deletionReceipts: counter('gm_deletion_receipts_total', 'Deletion receipts signed, by job status and retention', ['status', 'retention']),
    deletionAlerts: counter('gm_deletion_alerts_total', 'Deletion jobs that failed or timed out', ['reason']),
    receiptLatency: new Histogram({
      name: 'gm_deletion_verified_seconds', help: 'Deletion request to verified job', registers: [registry],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    }),
    searchLatency: new Histogram({
      name: 'gm_search_seconds', help: 'Search latency', registers: [registry],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    }),
    itemsReturned: new Histogram({
      name: 'gm_search_items', help: 'Items per evidence packet', registers: [registry], buckets: [0, 1, 2, 5, 10, 20, 50],
    }),
    cacheHits: counter('gm_retrieval_cache_total', 'Retrieval cache lookups', ['result']),
    deadLetters: counter('gm_dead_letters_total', 'Messages dead-lettered', ['topic']),
    deadLettersDropped: counter('gm_dead_letters_dropped_total', 'Messages skipped because the broker refused their dead letter too (an ALERT each)', ['topic']),
    httpResponses: counter('gm_http_responses_total', 'HTTP API responses by route pattern (never the URL) and status code', ['route', 'status']),
    receiptSigningFailures: counter('gm_receipt_signing_failures_total', 'Deletion receipts that could not be signed or stored (the ask is retried, then dead-lettered)'),
    policyChangeSeconds: new Histogram({
      name: 'gm_policy_change_applied_seconds',
      help: 'A policy change (a revocation among them) from the API\'s request to the policy projector having applied it; outcome timeout: not applied within the wait',
      labelNames: ['outcome'], registers: [registry],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
    ingestRequests: counter('gm_ingest_requests_total', 'memory.ingest requests by the ingest-gateway\'s decision (admitted: its command is on memory.commands)', ['outcome', 'code']),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** One Prometheus exposition of several registries' snapshots: same-named series are summed. */
export async function mergedExposition(snapshots: readonly MetricsSnapshot[]): Promise<{ contentType: string; text: string }> {
  const merged = AggregatorRegistry.aggregate([...snapshots]);
  return { contentType: merged.contentType, text: await merged.metrics() };
}
