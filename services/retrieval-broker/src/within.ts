/**
 * `work`'s answer, or undefined once `ms` have passed (the work settles on its own, unobserved).
 * Every Kafka read a request waits on is bounded so: while a broker shuts down or hangs, one
 * read with the client's own retries took past 30 s in the fault suite, and left its request
 * without an answer.
 */
export async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  // Settled either way: work that fails after the deadline is not an unhandled rejection.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
