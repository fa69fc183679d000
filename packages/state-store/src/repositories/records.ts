import { RecordMeta } from '@gm/contracts';
import type { KeyValueStore } from '../port.ts';
import type { KeySpace } from './keys.ts';

/**
 * The record hash (§4): metadata only, never content. Version-guarded so a redelivered old
 * event never rolls a record back. Also maintains the per-subject and quarantine indexes.
 */
export class RecordHash {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  async put(meta: RecordMeta): Promise<boolean> {
    const written = await this.kv.setIfVersionAtLeast(this.keys.record(meta.tenantId, meta.id), JSON.stringify(meta), meta.version);
    if (!written) return false;
    await this.kv.sadd(this.keys.subjectRecords(meta.tenantId, meta.subjectId), [meta.id]);
    if (meta.status === 'quarantined') await this.kv.sadd(this.keys.quarantine(meta.tenantId), [meta.id]);
    else await this.kv.srem(this.keys.quarantine(meta.tenantId), [meta.id]);
    return true;
  }

  async get(tenantId: string, id: string): Promise<RecordMeta | null> {
    const raw = await this.kv.get(this.keys.record(tenantId, id));
    return raw === null ? null : RecordMeta.parse(JSON.parse(raw));
  }

  async getMany(tenantId: string, ids: string[]): Promise<Map<string, RecordMeta>> {
    if (ids.length === 0) return new Map();
    const raws = await this.kv.mget(ids.map((id) => this.keys.record(tenantId, id)));
    const out = new Map<string, RecordMeta>();
    raws.forEach((raw) => {
      if (raw !== null) {
        const meta = RecordMeta.parse(JSON.parse(raw));
        out.set(meta.id, meta);
      }
    });
    return out;
  }

  async idsOfSubject(tenantId: string, subjectId: string): Promise<string[]> {
    return (await this.kv.smembers(this.keys.subjectRecords(tenantId, subjectId))).sort();
  }

  async quarantined(tenantId: string): Promise<RecordMeta[]> {
    const ids = await this.kv.smembers(this.keys.quarantine(tenantId));
    return [...(await this.getMany(tenantId, ids)).values()].filter((m) => m.status === 'quarantined');
  }

  /** Every record, for digests and replay checks. */
  async all(): Promise<RecordMeta[]> {
    const keys = await this.kv.keys(this.keys.records());
    const raws = keys.length === 0 ? [] : await this.kv.mget(keys);
    return raws.flatMap((raw) => (raw === null ? [] : [RecordMeta.parse(JSON.parse(raw))]));
  }
}

/** The primary copy of content (deletion target `primary`). */
export class ContentStore {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  put = async (tenantId: string, id: string, content: string) => {
    await this.kv.set(this.keys.content(tenantId, id), content);
  };
  get = (tenantId: string, id: string) => this.kv.get(this.keys.content(tenantId, id));
  remove = (tenantId: string, ids: string[]) =>
    ids.length === 0 ? Promise.resolve(0) : this.kv.del(ids.map((id) => this.keys.content(tenantId, id)));
  count = async (tenantId: string, ids: string[]) =>
    ids.length === 0 ? 0 : this.kv.exists(ids.map((id) => this.keys.content(tenantId, id)));
}

/** Tombstones: the read path drops anything listed here, whatever the index says (§6.3.5). */
export class Tombstones {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  add = async (tenantId: string, ids: string[]) => {
    for (const id of ids) await this.kv.set(this.keys.tombstone(tenantId, id), '1');
  };
  async filterTombstoned(tenantId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const raws = await this.kv.mget(ids.map((id) => this.keys.tombstone(tenantId, id)));
    return new Set(ids.filter((_, i) => raws[i] !== null));
  }
}

/**
 * Ids are unique per tenant but state is partitioned by subject: a claim (SET NX) binds a
 * client-chosen id to one subject before its command is sent.
 */
export class IdClaims {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  async claim(tenantId: string, id: string, subjectId: string): Promise<boolean> {
    const key = this.keys.idClaim(tenantId, id);
    if (await this.kv.set(key, subjectId, { nx: true })) return true;
    return (await this.kv.get(key)) === subjectId;
  }
  owner = (tenantId: string, id: string) => this.kv.get(this.keys.idClaim(tenantId, id));
}
