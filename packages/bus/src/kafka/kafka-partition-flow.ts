/**
 * When a subscription's partition is fetched and when it is paused. Batches are fetched ahead
 * of their handling (kafka-subscription.ts), so a partition stays in every fetch while its batch
 * runs; it pauses only while `limit` fetched batches are waiting or running (a slow handler must
 * not pile up fetched batches without bound), or while it is held after a failure. It resumes
 * once neither is true, never earlier: a partition held until a rebalance is due must not be
 * fetched again because its last batch settled.
 */
export class PartitionFlow {
  private readonly fetched = new Map<string, number>();
  private readonly held = new Map<string, NodeJS.Timeout>();
  private readonly resumes = new Map<string, () => void>();

  constructor(private readonly limit: number) {}

  /** A batch of the partition was fetched; pauses it at the limit. */
  add(key: string, pause: () => () => void): void {
    const count = (this.fetched.get(key) ?? 0) + 1;
    this.fetched.set(key, count);
    if (count >= this.limit) this.pause(key, pause);
  }

  /** A fetched batch was handled (or dropped). */
  settle(key: string): void {
    const count = (this.fetched.get(key) ?? 1) - 1;
    if (count > 0) this.fetched.set(key, count);
    else this.fetched.delete(key);
    this.release(key);
  }

  /** Keeps the partition paused for `ms` (a retry's back-off, a takeover's rebalance). */
  hold(key: string, pause: () => () => void, ms: number): void {
    clearTimeout(this.held.get(key));
    this.pause(key, pause);
    this.held.set(key, setTimeout(() => {
      this.held.delete(key);
      this.release(key);
    }, ms).unref());
  }

  close(): void {
    for (const timer of this.held.values()) clearTimeout(timer);
    this.held.clear();
  }

  private pause(key: string, pause: () => () => void): void {
    if (!this.resumes.has(key)) this.resumes.set(key, pause());
  }

  private release(key: string): void {
    if (this.held.has(key) || (this.fetched.get(key) ?? 0) >= this.limit) return;
    const resume = this.resumes.get(key);
    this.resumes.delete(key);
    resume?.();
  }
}
