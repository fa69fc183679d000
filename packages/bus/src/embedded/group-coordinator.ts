/**
 * In-process consumer-group membership, the embedded stand-in for Kafka's group coordinator.
 * Member i (in join order, among the members subscribed to a topic) owns the partitions p with
 * p % memberCount === i; assignments are recomputed from the current membership on every
 * look-up, so a join or leave rebalances at once.
 *
 * Membership is per bus instance: two processes consuming one file with the same group each
 * consume every partition. The commit fence in SqliteLog still keeps bus appends exactly-once
 * then, but handlers may run twice — the embedded runtime is meant to be one process.
 */
import { Signal } from '../signal.ts';

export interface GroupMember {
  readonly groupId: string;
  readonly topics: readonly string[];
}

export class GroupCoordinator {
  /** Wakes members when an assignment or a partition lock changes. */
  readonly changed = new Signal();
  private readonly groups = new Map<string, GroupMember[]>();
  /** Partitions whose message is being handled right now, and those someone waited for. */
  private readonly busy = new Set<string>();
  private readonly contended = new Set<string>();

  join(member: GroupMember): void {
    const members = this.groups.get(member.groupId) ?? [];
    members.push(member);
    this.groups.set(member.groupId, members);
    this.changed.notify();
  }

  leave(member: GroupMember): void {
    const remaining = (this.groups.get(member.groupId) ?? []).filter((m) => m !== member);
    if (remaining.length === 0) this.groups.delete(member.groupId);
    else this.groups.set(member.groupId, remaining);
    this.changed.notify();
  }

  hasMembers(groupId: string): boolean {
    return this.groups.has(groupId);
  }

  assigned(member: GroupMember, topic: string, partitions: number): number[] {
    const peers = (this.groups.get(member.groupId) ?? []).filter((m) => m.topics.includes(topic));
    const index = peers.indexOf(member);
    if (index < 0) return [];
    const owned: number[] = [];
    for (let p = index; p < partitions; p += peers.length) owned.push(p);
    return owned;
  }

  owns(member: GroupMember, topic: string, partition: number): boolean {
    const peers = (this.groups.get(member.groupId) ?? []).filter((m) => m.topics.includes(topic));
    const index = peers.indexOf(member);
    return index >= 0 && partition % peers.length === index;
  }

  /**
   * A new owner must not start a partition while the previous owner still handles a message
   * of it (the handler would run twice); it skips the partition and is woken on release.
   */
  tryLock(groupId: string, topic: string, partition: number): boolean {
    const key = lockKey(groupId, topic, partition);
    if (this.busy.has(key)) {
      this.contended.add(key);
      return false;
    }
    this.busy.add(key);
    return true;
  }

  unlock(groupId: string, topic: string, partition: number): void {
    const key = lockKey(groupId, topic, partition);
    this.busy.delete(key);
    if (this.contended.delete(key)) this.changed.notify();
  }
}

const lockKey = (groupId: string, topic: string, partition: number): string => `${groupId}\u0000${topic}\u0000${partition}`;
