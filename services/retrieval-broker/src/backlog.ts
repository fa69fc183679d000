/**
 * Backpressure for asynchronous writes. A 202 does not wait for the pipeline, so without a bound
 * a fast client could pile up commands faster than write-admission and the projections fold
 * them, and every token read behind them would wait longer and longer (measured: 64 async
 * clients acknowledged 1,156 writes/s while the embedded pipeline folded 557/s, and a write
 * took 54 s to become searchable). So while the pipeline is more than `limit` messages behind,
 * an asynchronous write is refused with a retriable 503 and `Retry-After`; a synchronous write
 * waits for the pipeline anyway and is never refused for it.
 */
import { groupLag, type Bus } from '@gm/bus';
import { CONSUMER_GROUPS, GovernedMemoryError, TOPICS } from '@gm/contracts';
import { READ_YOUR_WRITES_GROUPS } from './command-gateway.ts';
import { within } from './within.ts';

/** The backlog is read from the log at most this often (on Kafka it is two admin requests per group). */
const FRESH_MS = 100;

/**
 * How long an asynchronous write waits for the backlog to be read before it is refused with a
 * retriable 503: while a broker shuts down or hangs, one read can take the client's own retries
 * and leave the request unanswered (the fault suite's rolling restart saw it past 30 s).
 */
const DEFAULT_READ_TIMEOUT_MS = 5_000;

export class PipelineBacklog {
  private reading: Promise<number> | undefined;
  private readAt = -Infinity;
  private last = 0;

  constructor(private readonly bus: Bus, private readonly limit: number, private readonly readTimeoutMs = DEFAULT_READ_TIMEOUT_MS) {}

  /** Throws the retriable 503 while the pipeline is over its limit. */
  async admitAsync(): Promise<void> {
    const behind = await within(this.behind(), this.readTimeoutMs);
    if (behind === undefined) {
      throw new GovernedMemoryError('MEM_UNAVAILABLE', `the pipeline's backlog could not be read within ${this.readTimeoutMs / 1000} s; retry the asynchronous write shortly`, { retriable: true });
    }
    if (behind <= this.limit) return;
    throw new GovernedMemoryError('MEM_UNAVAILABLE', `the pipeline is ${behind} messages behind (limit ${this.limit}); retry the asynchronous write shortly`, { retriable: true });
  }

  /** Commands write-admission has not decided, plus events the slower read-your-writes projection has not folded. */
  private async behind(): Promise<number> {
    if (performance.now() - this.readAt < FRESH_MS) return this.last;
    this.reading ??= (async () => {
      try {
        const lagOf = async (topic: string, group: string) => (await groupLag(this.bus, group, topic)).reduce((sum, lag) => sum + lag, 0);
        const [commands, ...events] = await Promise.all([
          lagOf(TOPICS.commands, CONSUMER_GROUPS.writeAdmission), ...READ_YOUR_WRITES_GROUPS.map((g) => lagOf(TOPICS.events, g)),
        ]);
        this.last = (commands ?? 0) + Math.max(0, ...events);
        this.readAt = performance.now();
        return this.last;
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }
}
