/**
 * The bus's idempotent producer (single-partition produces, dead letters of `sends: false`
 * groups), replaced after *any* failed send.
 *
 * kafkajs hands a failed request's sequence numbers back to the producer, so the next send to
 * that partition reuses them. When the failed request had landed after all — a request that
 * timed out while the broker waited for its replicas, as when a broker is killed under load —
 * the broker takes the next request, with other records but the same numbers, for a retry of
 * the landed one: it answers success with the landed one's offsets and appends nothing. The
 * fault suite lost a data key so: write-admission sealed a record under a key that was never
 * in memory.keys. Sequence numbers are only safe to reuse for the same records, which kafkajs's
 * own retries within one send do; a new send after a failure needs a new producer id, whose
 * numbers start afresh.
 */
import type { Producer } from 'kafkajs';

export class IdempotentProducer {
  private current: Promise<Producer> | undefined;

  constructor(
    /** Connects a new idempotent producer (a new producer id). */
    private readonly connect: () => Promise<Producer>,
    /** Disconnects a replaced producer once its other requests in flight have settled. */
    private readonly retire: (producer: Promise<Producer>) => void,
  ) {}

  /** Runs `send` with the current producer; if it fails, that producer sends nothing more. */
  async send<T>(send: (producer: Producer) => Promise<T>): Promise<T> {
    const producer = this.producer();
    try {
      return await send(await producer);
    } catch (err) {
      if (this.current === producer) {
        this.current = undefined;
        this.retire(producer);
      }
      throw err;
    }
  }

  /** The producer now in use, if one was connected (closing disconnects it). */
  get connected(): Promise<Producer> | undefined {
    return this.current;
  }

  private producer(): Promise<Producer> {
    const producer = (this.current ??= this.connect());
    // A failed connect is not kept: the next send tries again.
    producer.catch(() => {
      if (this.current === producer) this.current = undefined;
    });
    return producer;
  }
}
