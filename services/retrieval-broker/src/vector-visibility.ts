import type { VectorIndex } from '@gm/search-index';
import { raise, type Positions } from './consistency-token.ts';

/**
 * Makes the vectors of a token's writes visible to a semantic search (design §6.7). The
 * vector-indexer commits before its vectors are searchable (they wait for a refresh), so a
 * search whose token the group has passed asks the index for one refresh — but only for
 * positions no earlier refresh covered: a refresh that started after the group passed some
 * events shows every vector up to them. A client sending the same or an older token again
 * therefore costs Elasticsearch nothing; only a token naming newer writes does, and those
 * writes cost more than their refresh. Positions are the log's, shared by every tenant: what
 * one can notice is only that some refresh ran since its own write.
 */
export class VectorVisibility {
  /** Per memory.events partition, the furthest event a completed refresh made visible. */
  private readonly covered = new Map<number, number>();

  constructor(private readonly vectors: Pick<VectorIndex, 'visible'>) {}

  /** `passed`: the events the vector-indexer's group has committed past, as the token's wait found them. */
  async after(passed: Positions): Promise<void> {
    if ([...passed].every(([partition, offset]) => offset <= (this.covered.get(partition) ?? -1))) return;
    await this.vectors.visible();
    for (const [partition, offset] of passed) raise(this.covered, partition, offset);
  }
}
