import { EvidencePacket, erasedProvenance } from '@gm/contracts';
import { z } from 'zod';
import type { KeyValueStore, KvWrite } from '../port.ts';
import type { KeySpace } from './keys.ts';

export const StoredPacket = z.object({
  packet: EvidencePacket,
  tenantId: z.string(),
  agentId: z.string(),
  /** Whom the packet was issued to: only its principal may validate it (§6.5). Absent in packets issued before it was kept. */
  principalId: z.string().optional(),
  /** Items whose record was revoked or deleted after issue; their excerpts are erased. */
  invalidated: z.array(z.string()),
});
export type StoredPacket = z.infer<typeof StoredPacket>;

/** Evidence packets (§6.5), kept with a TTL and indexed by record so deletion reaches them. */
export class PacketStore {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly keys: KeySpace,
    private readonly nowMs: () => number,
  ) {}

  /** One round trip; the per-record indexes first, for the reason `RetrievalCache.set` gives. */
  async put(stored: StoredPacket, ttlMs: number): Promise<void> {
    await this.kv.pipeline([
      ...stored.packet.items.map((item): KvWrite => ({ op: 'sadd', key: this.keys.packetsOf(stored.tenantId, item.recordId), members: [stored.packet.packetId] })),
      { op: 'set', key: this.keys.packet(stored.packet.packetId), value: JSON.stringify(stored), ttlMs },
    ]);
  }

  async get(packetId: string): Promise<StoredPacket | null> {
    const raw = await this.kv.get(this.keys.packet(packetId));
    return raw === null ? null : StoredPacket.parse(JSON.parse(raw));
  }

  /** Live packets that still carry an excerpt of any of these records. */
  async holding(tenantId: string, recordIds: string[]): Promise<string[]> {
    const out = new Set<string>();
    for (const recordId of recordIds) {
      for (const packetId of await this.kv.smembers(this.keys.packetsOf(tenantId, recordId))) {
        const stored = await this.get(packetId);
        const item = stored?.packet.items.find((i) => i.recordId === recordId);
        if (item && item.excerpt !== '') out.add(packetId);
      }
    }
    return [...out].sort();
  }

  /**
   * Live packets issued with any of these records, erased or not: what verification replays
   * ask the action gate about (an erased item must also validate as invalid).
   */
  async issuedWith(tenantId: string, recordIds: string[]): Promise<string[]> {
    const out = new Set<string>();
    for (const recordId of recordIds) {
      for (const packetId of await this.kv.smembers(this.keys.packetsOf(tenantId, recordId))) {
        if ((await this.get(packetId))?.tenantId === tenantId) out.add(packetId);
      }
    }
    return [...out].sort();
  }

  /**
   * Erases the excerpts of these records from every packet, and what names their sources (a
   * provenance uri is about the subject too, §8.4), and marks them invalid.
   */
  async invalidate(tenantId: string, recordIds: string[]): Promise<number> {
    const targets = new Set(recordIds);
    let changed = 0;
    for (const packetId of await this.holding(tenantId, recordIds)) {
      const key = this.keys.packet(packetId);
      const stored = await this.get(packetId);
      if (!stored) continue;
      const items = stored.packet.items.map((i) => (targets.has(i.recordId) ? { ...i, excerpt: '', provenanceRefs: erasedProvenance(i.provenanceRefs) } : i));
      const invalidated = [...new Set([...stored.invalidated, ...recordIds.filter((id) => items.some((i) => i.recordId === id))])];
      const ttlMs = Math.max(1, Date.parse(stored.packet.expiresAt) - this.nowMs());
      await this.kv.set(key, JSON.stringify({ ...stored, packet: { ...stored.packet, items }, invalidated }), { ttlMs });
      changed += 1;
    }
    return changed;
  }
}
