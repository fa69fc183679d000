import type { KeyValueStore } from '../port.ts';
import type { KeySpace } from './keys.ts';

/**
 * The retrieval cache. Callers build keys that include tenant, partitions, query, options
 * and policy revision (§6.3.3), so a policy change makes old entries unreachable; entries
 * are also indexed by record so deletion removes them actively.
 */
export class RetrievalCache {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  get = (key: string) => this.kv.get(this.keys.cache(key));

  async set(key: string, value: string, tenantId: string, recordIds: string[], ttlMs: number): Promise<void> {
    await this.kv.set(this.keys.cache(key), value, { ttlMs });
    for (const id of recordIds) await this.kv.sadd(this.keys.cachesOf(tenantId, id), [key]);
    await this.kv.sadd(this.keys.cachesOfTenant(tenantId), [key]);
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
