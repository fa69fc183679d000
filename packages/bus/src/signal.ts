/**
 * A level-free wake-up: `notify()` releases whoever is waiting right now. Waiters always pass
 * a timeout, which doubles as the poll fallback for changes made by another process (those
 * never notify us).
 */
export class Signal {
  private readonly waiters = new Set<() => void>();
  private notified = 0;

  /** Changes on every notify(): compare two readings to learn whether one happened between. */
  get version(): number {
    return this.notified;
  }

  notify(): void {
    this.notified++;
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }

  /** Registers synchronously, so a notify() issued after this call is never missed. */
  static any(signals: readonly Signal[], timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        for (const signal of signals) signal.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, timeoutMs));
      for (const signal of signals) signal.waiters.add(wake);
    });
  }
}
