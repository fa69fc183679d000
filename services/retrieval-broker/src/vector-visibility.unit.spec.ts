import { describe, expect, it } from 'vitest';
import { VectorVisibility } from './vector-visibility.ts';

/** A vector index that counts the refreshes it was asked for. */
function countingIndex(): { refreshes: number; visible(): Promise<void> } {
  const index = {
    refreshes: 0,
    async visible() {
      index.refreshes += 1;
    },
  };
  return index;
}

describe('VectorVisibility', () => {
  it('refreshes for a token of newer writes, and not again for the same or an older one', async () => {
    const index = countingIndex();
    const visibility = new VectorVisibility(index);
    await visibility.after(new Map([[0, 10], [3, 4]]));
    expect(index.refreshes).toBe(1);
    // The same token again, and one naming earlier events of the same partitions.
    await visibility.after(new Map([[0, 10], [3, 4]]));
    await visibility.after(new Map([[0, 2]]));
    expect(index.refreshes).toBe(1);
    // A later event, or a partition no refresh covered yet, needs one.
    await visibility.after(new Map([[0, 11]]));
    await visibility.after(new Map([[1, 0]]));
    expect(index.refreshes).toBe(3);
  });

  it('covers nothing when the refresh failed: the next search with the same token asks again', async () => {
    let fail = true;
    let refreshes = 0;
    const visibility = new VectorVisibility({
      async visible() {
        refreshes += 1;
        if (fail) throw new Error('elasticsearch unavailable');
      },
    });
    await expect(visibility.after(new Map([[0, 5]]))).rejects.toThrow('elasticsearch unavailable');
    fail = false;
    await visibility.after(new Map([[0, 5]]));
    expect(refreshes).toBe(2);
  });
});
