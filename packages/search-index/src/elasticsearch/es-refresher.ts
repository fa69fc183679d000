/**
 * Shared refreshes. A bulk with `refresh: true` makes Elasticsearch refresh the shard for
 * that one request, so concurrent writers (the index-builder's partitions run in parallel,
 * the deletion targets beside them) each paid a refresh. Here a writer writes without one and
 * then waits for a refresh that *started after* its write returned — visible on return, as
 * before — and every writer arriving meanwhile shares that same refresh.
 */
export class Refresher {
  /** The refresh now running: it may have started before the caller's write, so it does not count. */
  private running: Promise<void> | undefined;
  /** The refresh queued behind the running one: it starts after every current caller's write. */
  private queued: Promise<void> | undefined;

  constructor(private readonly refresh: () => Promise<void>) {}

  /** Resolves once a refresh that started after this call completed; rejects if it failed. */
  afterWrite(): Promise<void> {
    if (this.queued !== undefined) return this.queued;
    if (this.running === undefined) return this.start();
    const queued = this.running.catch(() => undefined).then(() => {
      this.queued = undefined;
      return this.start();
    });
    this.queued = queued;
    return queued;
  }

  private start(): Promise<void> {
    const running = this.refresh().finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }
}
