import { StoredRecordVersion } from '@gm/contracts';
import type { KeyValueStore, KvWrite } from '../port.ts';
import type { KeySpace } from './keys.ts';

/**
 * Every version of every record, metadata only (docs/api.md: `GET /v1/memories/{id}/history`).
 * One key per version: versions count up by one from 1, so the history of a record at version
 * n is read in one `mget` of versions 1..n, with no list to keep in order. Written by the
 * projector beside the record hash; a redelivered event rewrites the same value.
 */
export class RecordHistoryStore {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  putWrite = (tenantId: string, entry: StoredRecordVersion): KvWrite =>
    ({ op: 'set', key: this.keys.recordVersion(tenantId, entry.record.id, entry.record.version), value: JSON.stringify(entry) });

  /** Removes every version of a record up to `version`: its history goes with its content when it is purged (§6.4). */
  removeWrite = (tenantId: string, id: string, version: number): KvWrite =>
    ({ op: 'del', keys: Array.from({ length: Math.max(version, 0) }, (_, i) => this.keys.recordVersion(tenantId, id, i + 1)) });

  /** The versions kept of a record up to `version`, oldest first (a version folded before history was kept is absent). */
  async versions(tenantId: string, id: string, version: number): Promise<StoredRecordVersion[]> {
    if (version < 1) return [];
    const raws = await this.kv.mget(Array.from({ length: version }, (_, i) => this.keys.recordVersion(tenantId, id, i + 1)));
    return raws.flatMap((raw) => (raw === null ? [] : [StoredRecordVersion.parse(JSON.parse(raw))]));
  }
}
