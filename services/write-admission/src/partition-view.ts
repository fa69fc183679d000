import type { SubjectState } from '@gm/domain';

interface Staged {
  key: string;
  state: SubjectState;
}

/**
 * What write-admission knows of one partition beyond the committed states: the subject
 * states its handled-but-uncommitted commands produced (the bus commits several commands in
 * one transaction, so a command is decided before its predecessors committed), and whether
 * the log must be folded before the next command.
 *
 * The state a command is decided on must be the fold of the committed log plus the
 * provisional events of the commands before it in the same transaction, in order. So the
 * provisional states are merged into the committed ones only when the bus says their
 * transaction committed, and dropped — with a fold of the log before the next command — as
 * soon as any attempt of the partition is discarded (its transaction aborted or fenced, its
 * handler threw): the bus then hands over again from its last commit.
 */
export class PartitionView {
  private readonly pending: Staged[] = [];
  /** Offset of the last command handed over, while its chain is unbroken. */
  private last: number | undefined;

  /**
   * Whether the committed states may be stale for the command at `offset`. They are exact
   * when it directly follows the last command (one owner at a time, in order, so nobody else
   * wrote the partition in between), or when an uncommitted predecessor is still pending
   * (then both commit together or are discarded together; the gap is transaction markers).
   * Anything else — a first command, a redelivery, a gap after a takeover — folds the log.
   */
  mustFold(offset: number): boolean {
    if (this.last === undefined || offset <= this.last) return true;
    return offset !== this.last + 1 && this.pending.length === 0;
  }

  /** The command at `offset` is being decided; `folded` says the log was folded just before. */
  handling(offset: number, folded: boolean): void {
    if (folded) this.pending.length = 0;
    this.last = offset;
  }

  /** The provisional state of a subject, if a pending command changed it. */
  get(key: string): SubjectState | undefined {
    for (let i = this.pending.length - 1; i >= 0; i -= 1) {
      const staged = this.pending[i];
      if (staged?.key === key) return staged.state;
    }
    return undefined;
  }

  /** Records a command's resulting state; returns what to call once it committed (then it is the committed state). */
  stage(key: string, state: SubjectState): () => void {
    const staged = { key, state };
    this.pending.push(staged);
    return () => {
      const at = this.pending.indexOf(staged);
      if (at >= 0) this.pending.splice(at, 1);
    };
  }

  /** An attempt was discarded: everything provisional goes, and the next command folds the log. */
  discard(): void {
    this.pending.length = 0;
    this.last = undefined;
  }
}
