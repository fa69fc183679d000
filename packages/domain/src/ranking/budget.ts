/**
 * A deliberately simple, model-independent token estimate: about four characters per token
 * for English text. It only needs to be monotone and stable, not exact.
 */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * Fits ranked items into a token budget (§6.3 step 7). Walks in rank order and skips an
 * item that does not fit instead of stopping, so one long low-ranked item never crowds out
 * the shorter ones after it.
 */
export function fitToBudget<T>(ranked: T[], budget: number, limit: number, tokensOf: (item: T) => number): T[] {
  const chosen: T[] = [];
  let remaining = budget;
  for (const item of ranked) {
    if (chosen.length >= limit) break;
    const cost = tokensOf(item);
    if (cost <= remaining) {
      chosen.push(item);
      remaining -= cost;
    }
  }
  return chosen;
}
