/**
 * The embedded vector index: SQLite rows with the vector as a BLOB of float32s. knn selects
 * the rows that pass every filter first (an index on tenant, partition and expiry), then ranks
 * only those by exact dot product: no approximation, and nothing outside the filters is ever
 * scored.
 */
import type { MemoryKind } from '@gm/contracts';
import { openSqlite, truncateWal, underLock } from '@gm/thread-lock';
import type { VectorDocument, VectorHit, VectorIndex, VectorQuery } from '../vector-port.ts';
import { epochMsOf, validVector } from '../vector-values.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS vectors (
  tenant TEXT NOT NULL,
  record_id TEXT NOT NULL,
  partition_key TEXT NOT NULL,
  subject TEXT NOT NULL,
  kind TEXT NOT NULL,
  purposes TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  version INTEGER NOT NULL,
  model_id TEXT NOT NULL,
  vector BLOB NOT NULL,
  PRIMARY KEY (tenant, record_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_scope ON vectors (tenant, partition_key, expires_at_ms);
CREATE INDEX IF NOT EXISTS vectors_subject ON vectors (tenant, subject, partition_key);
`;

interface Row {
  record_id: string;
  partition_key: string;
  kind: MemoryKind;
  purposes: string;
  subject: string;
  vector: Buffer;
}

export interface SqliteVectorIndexOptions {
  /** Database file; created if missing. */
  file: string;
  /**
   * Erasure that is physically true (design §8.4): secure_delete, FTS5 secure-delete and a
   * TRUNCATE checkpoint in `eraseDeleted`. Default true; false only for the bench's A/B.
   */
  secureErasure?: boolean;
}

export function createSqliteVectorIndex(options: SqliteVectorIndexOptions): VectorIndex {
  const secureErasure = options.secureErasure ?? true;
  // A projection: `memctl replay` rebuilds it from the log (bus.db, FULL).
  const { db, writeLock } = openSqlite(options.file, { synchronous: 'NORMAL', secureDelete: secureErasure });
  underLock(writeLock, () => db.exec(SCHEMA));
  const upsertStmt = db.prepare(`
    INSERT INTO vectors (tenant, record_id, partition_key, subject, kind, purposes, expires_at_ms, version, model_id, vector)
    VALUES (@tenant, @recordId, @partition, @subject, @kind, @purposes, @expiresAtMs, @version, @modelId, @vector)
    ON CONFLICT (tenant, record_id) DO UPDATE SET
      partition_key = excluded.partition_key, subject = excluded.subject, kind = excluded.kind, purposes = excluded.purposes,
      expires_at_ms = excluded.expires_at_ms, version = excluded.version, model_id = excluded.model_id, vector = excluded.vector
    WHERE excluded.version >= vectors.version`);
  const upsertAll = db.transaction((rows: object[]) => {
    for (const row of rows) upsertStmt.run(row);
  });
  const removeStmt = db.prepare('DELETE FROM vectors WHERE tenant = ? AND record_id IN (SELECT value FROM json_each(?))');
  // One statement per shape, so that SQLite can pick the subject index when there is a subject.
  const candidatesWhere = `tenant = @tenant AND partition_key IN (SELECT value FROM json_each(@partitions))
      AND expires_at_ms > @nowMs AND model_id = @modelId
      AND EXISTS (SELECT 1 FROM json_each(vectors.purposes) WHERE value = @purpose)`;
  const candidatesStmt = db.prepare(`SELECT record_id, partition_key, kind, purposes, subject, vector FROM vectors WHERE ${candidatesWhere}`);
  const subjectCandidatesStmt = db.prepare(
    `SELECT record_id, partition_key, kind, purposes, subject, vector FROM vectors WHERE subject = @subject AND ${candidatesWhere}`,
  );
  const hasStmt = db.prepare('SELECT 1 FROM vectors WHERE tenant = ? AND record_id = ?');
  const vectorsOfStmt = db.prepare<[string, string, string], { record_id: string; vector: Buffer }>(
    'SELECT record_id, vector FROM vectors WHERE tenant = ? AND model_id = ? AND record_id IN (SELECT value FROM json_each(?))',
  );
  const countAll = db.prepare('SELECT COUNT(*) AS n FROM vectors');
  const countTenant = db.prepare('SELECT COUNT(*) AS n FROM vectors WHERE tenant = ?');
  const models = db.prepare<[], { model_id: string }>('SELECT DISTINCT model_id FROM vectors ORDER BY model_id');

  return {
    async upsert(docs) {
      const rows = docs.map((d: VectorDocument) => {
        const v = validVector(d.vector, 'vector');
        return {
          tenant: d.tenantId, recordId: d.recordId, partition: d.partition, subject: d.subjectId, kind: d.kind,
          purposes: JSON.stringify(d.purposes), expiresAtMs: epochMsOf(d.expiresAt, 'expiresAt'), version: d.version, modelId: d.modelId,
          vector: Buffer.from(v.buffer, v.byteOffset, v.byteLength),
        };
      });
      if (rows.length > 0) underLock(writeLock, () => upsertAll.immediate(rows));
    },

    async remove(tenantId, recordIds) {
      if (recordIds.length === 0) return 0;
      return underLock(writeLock, () => removeStmt.run(tenantId, JSON.stringify(recordIds)).changes);
    },

    async knn(query: VectorQuery): Promise<VectorHit[]> {
      if (query.partitions.length === 0 || !(query.k >= 1)) return [];
      const q = validVector(query.vector, 'vector');
      const params = {
        tenant: query.tenantId, partitions: JSON.stringify(query.partitions), nowMs: epochMsOf(query.now, 'now'), modelId: query.modelId, purpose: query.purpose,
      };
      const rows = (query.subjectId === undefined ? candidatesStmt.all(params) : subjectCandidatesStmt.all({ ...params, subject: query.subjectId })) as Row[];
      const kinds = query.kinds === undefined ? undefined : new Set(query.kinds);
      const k = Math.floor(query.k);
      // The k best so far, best first: a candidate below the k-th is dropped at once, so a scan of
      // n rows keeps k entries instead of sorting n (a partition of 100,000 sorted them all).
      const best: VectorHit[] = [];
      const before = (a: VectorHit, b: VectorHit): boolean => a.similarity > b.similarity || (a.similarity === b.similarity && a.recordId < b.recordId);
      const aligned = new Float32Array(q.length);
      for (const row of rows) {
        if (kinds !== undefined && !kinds.has(row.kind)) continue;
        if (row.vector.byteLength !== q.length * 4) continue;
        // Read in place when the Buffer's offset into its pool is a multiple of 4, else copied once into scratch.
        const v = row.vector.byteOffset % 4 === 0
          ? new Float32Array(row.vector.buffer, row.vector.byteOffset, q.length)
          : (new Uint8Array(aligned.buffer).set(row.vector), aligned);
        let dot = 0;
        for (let i = 0; i < q.length; i += 1) dot += v[i]! * q[i]!;
        const hit = { recordId: row.record_id, partition: row.partition_key, similarity: dot };
        if (best.length === k && !before(hit, best[k - 1]!)) continue;
        let at = best.length;
        while (at > 0 && before(hit, best[at - 1]!)) at -= 1;
        best.splice(at, 0, hit);
        if (best.length > k) best.pop();
      }
      return best;
    },

    async visible() {
      // A committed upsert is visible at once.
    },

    async has(tenantId, recordId) {
      return hasStmt.get(tenantId, recordId) !== undefined;
    },

    async vectorsOf(tenantId, recordIds, modelId) {
      if (recordIds.length === 0) return new Map();
      // Copied out of the row's Buffer (whose offset into its pool need not be a multiple of 4).
      return new Map(vectorsOfStmt.all(tenantId, modelId, JSON.stringify(recordIds))
        .map((row) => [row.record_id, new Float32Array(new Uint8Array(row.vector).buffer)]));
    },

    async count(tenantId) {
      const row = (tenantId === undefined ? countAll.get() : countTenant.get(tenantId)) as { n: number };
      return row.n;
    },

    async modelIds() {
      return models.all().map((r) => r.model_id);
    },

    async clear() {
      underLock(writeLock, () => db.exec('DELETE FROM vectors'));
    },

    async eraseDeleted() {
      return truncateWal(db, writeLock, secureErasure);
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
