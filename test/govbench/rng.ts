/** A small seeded PRNG (mulberry32): same seed ⇒ same episodes, checkpoints and scores. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
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
