/** Percentiles, summaries and progress lines shared by every bench probe. */

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  max: number;
}

/** Nearest-rank percentile of an unsorted sample (0 for an empty one). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] ?? 0;
}

export function summarize(xs: readonly number[]): Summary {
  const mean = xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    n: xs.length, p50: percentile(xs, 50), p95: percentile(xs, 95), p99: percentile(xs, 99), mean,
    max: xs.reduce((a, b) => Math.max(a, b), 0),
  };
}

/** Operations per second of `count` operations that took `ms` of wall time. */
export const perSecond = (count: number, ms: number): number => (ms > 0 ? (count * 1000) / ms : 0);

export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

const benchStarted = performance.now();

/** Progress goes to stderr so stdout carries only the result table. */
export function progress(message: string): void {
  const elapsed = ((performance.now() - benchStarted) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${elapsed}s] ${message}\n`);
}

export const elapsedMs = (): number => performance.now() - benchStarted;

/** Runs `total` tasks on `concurrency` lanes; each lane takes the next index when free. */
export async function lanes(total: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < total; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, total)) }, lane));
}
