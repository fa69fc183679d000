import { keyOf } from '@gm/ids';
import type { KeyValueStore } from '../port.ts';
import type { KeySpace } from './keys.ts';

/** One principal's requests of a batch, to be counted in a window. */
export interface RateCount {
  tenant: string;
  principal: string;
  requests: number;
}

/**
 * Request counters per verified principal in fixed windows (design §9.3, docs/ingest.md#rate-limit):
 * on Redis, every instance of a service adds to the same counter, so several replicas together
 * allow a principal the limit once, not once each. A counter lives two windows, then is gone.
 */
export class RateCounters {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  private key = (tenant: string, principal: string, window: number) => `${this.keys.prefix}rate:${keyOf(tenant, principal, String(window))}`;

  /**
   * Adds each entry's requests to its principal's counter of the window `window` (a window's
   * index: epoch ms divided by `windowMs`), in one pipeline, and answers each counter's value
   * after its addition, in order.
   */
  async add(window: number, windowMs: number, counts: readonly RateCount[]): Promise<number[]> {
    const results = await this.kv.pipeline(counts.map((c) => ({ op: 'incr', key: this.key(c.tenant, c.principal, window), by: c.requests, ttlMs: 2 * windowMs })));
    return results.map(Number);
  }
}
