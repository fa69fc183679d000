import { RecordMeta } from '@gm/contracts';
import { z } from 'zod';
import type { KeyValueStore, KvWrite } from '../port.ts';
import type { KeySpace } from './keys.ts';

/**
 * The record hash (§4): metadata only, never content. Version-guarded so a redelivered old
 * event never rolls a record back. Also maintains the per-subject and quarantine indexes.
 */
/**
 * The three fields a summary rebuild needs of every record of its subject; parsing only these
 * (the rest of the stored JSON is ignored) costs a fraction of a full RecordMeta parse, which
 * was a fifth of the embedded runtime's CPU under updates to 400-record subjects.
 */
const RecordStatusOf = z.object({ id: RecordMeta.shape.id, status: RecordMeta.shape.status, contentHash: RecordMeta.shape.contentHash });
export type RecordStatusOf = z.infer<typeof RecordStatusOf>;

export class RecordHash {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  async put(meta: RecordMeta): Promise<boolean> {
    const written = await this.kv.setIfVersionAtLeast(this.keys.record(meta.tenantId, meta.id), JSON.stringify(meta), meta.version);
    if (!written) return false;
    await this.kv.pipeline(this.indexWrites(meta));
    return true;
  }

  /**
   * `put` as pipeline writes, for a caller that already knows the stored version is not
   * higher (the projector, the only writer, folds in version order): the versioned write
   * first — its result says whether it wrote — then the subject and quarantine indexes.
   */
  putWrites(meta: RecordMeta, indexedUnder = meta.subjectId): KvWrite[] {
    return [{ op: 'setIfVersionAtLeast', key: this.keys.record(meta.tenantId, meta.id), value: JSON.stringify(meta), version: meta.version }, ...this.indexWrites(meta, indexedUnder)];
  }

  /** `indexedUnder`: the subject whose index holds the record (a purged record no longer names it). */
  private indexWrites(meta: RecordMeta, indexedUnder = meta.subjectId): KvWrite[] {
    const quarantine = this.keys.quarantine(meta.tenantId);
    // A purged record leaves its subject's index: that index is keyed by the subject id, and once
    // the last record of a forgotten subject is purged the key goes too (docs/security.md).
    const subject = this.keys.subjectRecords(meta.tenantId, indexedUnder);
    return [
      meta.status === 'purged' ? { op: 'srem', key: subject, members: [meta.id] } : { op: 'sadd', key: subject, members: [meta.id] },
      meta.status === 'quarantined' ? { op: 'sadd', key: quarantine, members: [meta.id] } : { op: 'srem', key: quarantine, members: [meta.id] },
    ];
  }

  /** Records of several tenants in one read, keyed by `recordRef(tenantId, id)`. */
  async getAcross(refs: ReadonlyArray<{ tenantId: string; id: string }>): Promise<Map<string, RecordMeta>> {
    const out = new Map<string, RecordMeta>();
    if (refs.length === 0) return out;
    const raws = await this.kv.mget(refs.map((r) => this.keys.record(r.tenantId, r.id)));
    raws.forEach((raw) => {
      if (raw === null) return;
      const meta = RecordMeta.parse(JSON.parse(raw));
      out.set(recordRef(meta.tenantId, meta.id), meta);
    });
    return out;
  }

  async get(tenantId: string, id: string): Promise<RecordMeta | null> {
    const raw = await this.kv.get(this.keys.record(tenantId, id));
    return raw === null ? null : RecordMeta.parse(JSON.parse(raw));
  }

  /** Status and content hash of each of these records that exists (see RecordStatusOf). */
  statusesOf = (tenantId: string, ids: string[]): Promise<Map<string, RecordStatusOf>> => this.parsedMany(tenantId, ids, RecordStatusOf);

  getMany = (tenantId: string, ids: string[]): Promise<Map<string, RecordMeta>> => this.parsedMany(tenantId, ids, RecordMeta);

  /** The records of these ids that exist, by id, each parsed with `schema` (one read for all). */
  private async parsedMany<T extends { id: string }>(tenantId: string, ids: string[], schema: z.ZodType<T>): Promise<Map<string, T>> {
    if (ids.length === 0) return new Map();
    const raws = await this.kv.mget(ids.map((id) => this.keys.record(tenantId, id)));
    const out = new Map<string, T>();
    for (const raw of raws) {
      if (raw === null) continue;
      const record = schema.parse(JSON.parse(raw));
      out.set(record.id, record);
    }
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

/** The key a batch of several tenants' records is indexed by. */
export const recordRef = (tenantId: string, id: string): string => `${tenantId}\u0000${id}`;

/** The primary copy of content (deletion target `primary`). */
export class ContentStore {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  putWrite = (tenantId: string, id: string, content: string): KvWrite => ({ op: 'set', key: this.keys.content(tenantId, id), value: content });
  removeWrite = (tenantId: string, ids: string[]): KvWrite => ({ op: 'del', keys: ids.map((id) => this.keys.content(tenantId, id)) });
  put = async (tenantId: string, id: string, content: string) => {
    await this.kv.set(this.keys.content(tenantId, id), content);
  };
  get = (tenantId: string, id: string) => this.kv.get(this.keys.content(tenantId, id));
  /** The contents held of these ids, in one read (absent ids are left out). */
  getMany = async (tenantId: string, ids: string[]): Promise<Map<string, string>> => {
    if (ids.length === 0) return new Map();
    const values = await this.kv.mget(ids.map((id) => this.keys.content(tenantId, id)));
    return new Map(ids.flatMap((id, i) => (values[i] == null ? [] : [[id, values[i]] as [string, string]])));
  };
  remove = (tenantId: string, ids: string[]) =>
    ids.length === 0 ? Promise.resolve(0) : this.kv.del(ids.map((id) => this.keys.content(tenantId, id)));
  count = async (tenantId: string, ids: string[]) =>
    ids.length === 0 ? 0 : this.kv.exists(ids.map((id) => this.keys.content(tenantId, id)));
}

/** Tombstones: the read path drops anything listed here, whatever the index says (§6.3.5). */
export class Tombstones {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  add = async (tenantId: string, ids: string[]) => {
    await this.kv.pipeline(this.addWrites(tenantId, ids));
  };
  addWrites = (tenantId: string, ids: string[]): KvWrite[] => ids.map((id) => ({ op: 'set', key: this.keys.tombstone(tenantId, id), value: '1' }));
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
    const [claimed] = await this.claimAll(tenantId, [{ id, subjectId }]);
    return claimed === true;
  }
  /** `claim` for many ids at once: one pipeline of SET NX, then one read of those already taken. */
  async claimAll(tenantId: string, claims: ReadonlyArray<{ id: string; subjectId: string }>): Promise<boolean[]> {
    if (claims.length === 0) return [];
    const set = await this.kv.pipeline(claims.map((c) => this.claimWrite(tenantId, c.id, c.subjectId)));
    const taken = claims.filter((_, i) => set[i] !== true);
    const owners = taken.length === 0 ? [] : await this.kv.mget(taken.map((c) => this.keys.idClaim(tenantId, c.id)));
    const ownerOf = new Map(taken.map((c, i) => [c.id, owners[i]]));
    return claims.map((c, i) => set[i] === true || ownerOf.get(c.id) === c.subjectId);
  }
  owner = (tenantId: string, id: string) => this.kv.get(this.keys.idClaim(tenantId, id));
  /** The claim as a pipeline write (SET NX), for a fold that already knows the subject. */
  claimWrite = (tenantId: string, id: string, subjectId: string): KvWrite => ({ op: 'set', key: this.keys.idClaim(tenantId, id), value: subjectId, nx: true });
  /**
   * The claim of a purged record, kept without its subject: the id stays taken for every subject
   * (ids are never reused, §5.10), and the claim no longer names whom it was about.
   */
  retireWrite = (tenantId: string, id: string): KvWrite => ({ op: 'set', key: this.keys.idClaim(tenantId, id), value: RETIRED_CLAIM });
}

/** A purged id's claim: no subject id holds `~` (contracts' Id), so it matches no claimant. */
const RETIRED_CLAIM = '~purged';
