import { seededRandom } from '@gm/testing/seeded-random';

/** A small seeded PRNG (mulberry32): same seed ⇒ same episodes, checkpoints and scores. */
export class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = seededRandom(seed);
  }
  int(maxExclusive: number): number {
    return Math.floor(this.next() * maxExclusive);
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
  /**
   * A made-up word that occurs nowhere else (a leak marker): syllables, then digits, so no
   * stemmer shortens it and a substring search finds exactly this record's copies.
   */
  code(): string {
    const syllables = ['ka', 'vo', 'ri', 'ze', 'lu', 'mo', 'qua', 'pex', 'dro', 'sil', 'tav', 'nor', 'gim', 'bel', 'fyr'];
    let word = '';
    for (let i = 0; i < 3; i += 1) word += this.pick(syllables);
    return `${word}${1000 + this.int(9000)}`;
  }
}

/** Derives an independent seed per (seed, label), so adding an episode does not shift the others. */
export function subSeed(seed: number, label: string): number {
  let h = seed ^ 0x9e3779b9;
  for (let i = 0; i < label.length; i += 1) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
