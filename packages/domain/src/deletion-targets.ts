import { DeletionTarget } from '@gm/contracts';

/**
 * Every copy a deployment keeps, and its keys (§8): each is a deletion target that must vouch
 * for a deletion. Without vectors (semantic retrieval off) there is no `vector` copy to delete
 * or to vouch for, and no worker that would acknowledge it. The same rule on both runtimes.
 */
export const deletionTargetsOf = (keepsVectors: boolean): DeletionTarget[] =>
  DeletionTarget.options.filter((t) => t !== 'vector' || keepsVectors);
