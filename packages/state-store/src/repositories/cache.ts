import type { KeyValueStore, KvWrite } from '../port.ts';
import type { KeySpace } from './keys.ts';

/**
 * The retrieval cache. Callers build keys that include tenant, partitions, query, options
 * and policy revision (§6.3.3), so a policy change makes old entries unreachable; entries
 * are also indexed by record so deletion removes them actively.
 */
export class RetrievalCache {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  get = (key: string) => this.kv.get(this.keys.cache(key));

  /**
   * One round trip (SQLite: one transaction). The indexes go first: a pipeline cut short on
   * Redis then leaves an index entry for nothing (`holding` checks the entry exists), never an
   * entry that a deletion could not find.
   */
  async set(key: string, value: string, tenantId: string, recordIds: string[], ttlMs: number): Promise<void> {
    await this.kv.pipeline([
      ...recordIds.map((id): KvWrite => ({ op: 'sadd', key: this.keys.cachesOf(tenantId, id), members: [key] })),
      { op: 'sadd', key: this.keys.cachesOfTenant(tenantId), members: [key] },
      { op: 'set', key: this.keys.cache(key), value, ttlMs },
    ]);
  }

  /**
   * Drops every cache entry of a tenant: a policy change removes them actively (§6.6), not
   * only by making their revision-keyed keys unreachable. Returns how many still existed.
   */
  async invalidateTenant(tenantId: string): Promise<number> {
    const keys = await this.kv.smembers(this.keys.cachesOfTenant(tenantId));
    if (keys.length === 0) return 0;
    const removed = await this.kv.del(keys.map((k) => this.keys.cache(k)));
    await this.kv.srem(this.keys.cachesOfTenant(tenantId), keys);
    return removed;
  }

  /** Cache entries that mention any of these records and still exist. */
  async holding(tenantId: string, recordIds: string[]): Promise<string[]> {
    const out = new Set<string>();
    for (const id of recordIds) {
      for (const key of await this.kv.smembers(this.keys.cachesOf(tenantId, id))) {
        if ((await this.kv.exists([this.keys.cache(key)])) > 0) out.add(key);
      }
    }
    return [...out].sort();
  }

  async invalidate(tenantId: string, recordIds: string[]): Promise<number> {
    const held = await this.holding(tenantId, recordIds);
    const removed = held.length === 0 ? 0 : await this.kv.del(held.map((k) => this.keys.cache(k)));
    for (const id of recordIds) await this.kv.del([this.keys.cachesOf(tenantId, id)]);
    return removed;
  }
}
