/**
 * Which of a member's partitions have a handler stuck past the session timeout (no progress: no
 * message handled, no retry). Batches run in the background (kafka-subscription.ts), so kafkajs
 * keeps heartbeating and the group would never evict the member: the subscription asks here,
 * every quarter session, and leaves by itself when something stalled.
 *
 * Time a batch spends waiting on Kafka itself (its partition's fencing, a commit, the handler's
 * own calls into the bus) is not the handler's: a broker that hangs is not a stalled handler, and
 * leaving the group for it rebalanced every member while the cluster was moving leaders and
 * coordinators (the broker freeze made twelve groups leave between 6.5 and 13.5 s after the
 * fault, around the fencing).
 */

/**
 * How long a batch may wait on Kafka itself before that counts as a stall too: those waits are
 * bounded by the client's request timeouts and retries, and a broker outage is not a handler
 * that stopped. A backstop for a client that never answers.
 */
const KAFKA_WAIT_NOT_A_STALL_MS = 60_000;

export class StallWatch {
  /** When each partition's batch last made progress. */
  private readonly inFlight = new Map<string, number>();
  /** Partitions whose batch waits on Kafka, and since when. */
  private readonly inKafka = new Map<string, { since: number; depth: number }>();

  constructor(private readonly sessionTimeoutMs: number) {}

  /** A partition's batch started, or made progress (a message handled, a retry). */
  progressed(key: string): void {
    this.inFlight.set(key, performance.now());
  }

  /** A partition's batch settled: nothing of it is watched any more. */
  settled(key: string): void {
    this.inFlight.delete(key);
  }

  /** Runs a step that waits on Kafka; its time does not count towards a stall. */
  async onKafka<T>(key: string, step: () => Promise<T>): Promise<T> {
    const entry = this.inKafka.get(key) ?? { since: performance.now(), depth: 0 };
    entry.depth += 1;
    this.inKafka.set(key, entry);
    try {
      return await step();
    } finally {
      entry.depth -= 1;
      if (entry.depth === 0 && this.inKafka.get(key) === entry) this.inKafka.delete(key);
      // The time spent waiting on Kafka is not the handler's.
      if (this.inFlight.has(key)) this.inFlight.set(key, performance.now());
    }
  }

  /** The partitions (keys) whose batch made no progress for longer than the session timeout. */
  stalled(): string[] {
    const now = performance.now();
    const inKafkaWait = (key: string) => {
      const since = this.inKafka.get(key)?.since;
      return since !== undefined && now - since < KAFKA_WAIT_NOT_A_STALL_MS;
    };
    return [...this.inFlight].filter(([key, startedAt]) => !inKafkaWait(key) && now - startedAt > this.sessionTimeoutMs).map(([key]) => key);
  }
}
