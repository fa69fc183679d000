/**
 * Polls `probe` until it returns a value (not undefined/false); fails naming `what` after
 * `timeoutMs`. The one way specs wait for something to happen: on a condition, never a sleep.
 * A probe that checks invariants on the way may ask for a shorter `intervalMs`, to see more of them.
 */
export async function eventually<T>(
  what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 10_000, intervalMs = 10,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
