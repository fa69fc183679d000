import type { RecordMeta } from '@gm/contracts';
import { toIndexDocument } from '@gm/index-builder';
import { recordPartition } from '@gm/domain';
import { MODEL_ID } from '@gm/embedding';
import type { SearchIndex, VectorIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';
import { contentOf, prng, sha256, tenantOf } from './corpus.ts';
import { lanes, progress } from './stats.ts';

/**
 * Seeds the search dataset below the API, through the runtime's own store ports: loading
 * 100k records through HTTP (one Kafka/SQLite round of the whole pipeline each) would take
 * longer than the whole bench. Each record is what the projector and the index-builder make
 * of a MemoryWritten event: claim, primary content, record hash, index document, and one
 * generation bump per tenant. The records are cloned from `template`, a record written
 * through the API and read back, so their shape is the pipeline's. write-admission never
 * sees them: they are for reading only.
 */
export function seededRecord(template: RecordMeta, i: number, tenants: number, now: Date): { meta: RecordMeta; content: string } {
  const content = contentOf(i);
  const meta: RecordMeta = {
    ...template,
    id: `seed-${i}`, tenantId: tenantOf(i, tenants), subjectId: `subj-${i % 20}`, contentHash: sha256(content),
    provenance: [{ source: 'import', observedAt: now.toISOString() }], createdAt: now.toISOString(), version: 1, status: 'active',
  };
  return { meta, content };
}

const BATCH = 1000;
const DIMENSIONS = 384;

/**
 * A seeded record's vector: a deterministic unit vector, not the model's embedding of its
 * content (embedding 100,000 texts would take minutes). A kNN's cost does not depend on what
 * the vectors mean; the query is still embedded by the model, as every search's is.
 */
function seededVector(i: number): Float32Array {
  const rand = prng(50_000 + i);
  const v = Float32Array.from({ length: DIMENSIONS }, () => rand() * 2 - 1);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

export async function seedBelowApi(
  index: SearchIndex, state: StateStore, template: RecordMeta, from: number, to: number, tenants: number, label: string,
  vectors?: VectorIndex,
): Promise<void> {
  if (template.status !== 'active' || template.visibility !== 'team') throw new Error('the seed template must be an active team record');
  const now = new Date();
  for (let start = from; start < to; start += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, to - start) }, (_, j) => seededRecord(template, start + j, tenants, now));
    // The projector's fold of MemoryWritten (services/projector), record by record; concurrent
    // so a networked store is not paced by one round trip at a time.
    await lanes(batch.length, 32, async (j) => {
      const r = batch[j];
      if (r === undefined) return;
      await state.idClaims.claim(r.meta.tenantId, r.meta.id, r.meta.subjectId);
      await state.contents.put(r.meta.tenantId, r.meta.id, r.content);
      await state.records.put(r.meta);
    });
    // The index-builder's fold, a batch per upsert.
    await index.upsert(batch.map((r) => toIndexDocument(r.meta, r.content)));
    // The vector-indexer's fold, where the runtime keeps vectors.
    await vectors?.upsert(batch.map((r, j) => ({
      tenantId: r.meta.tenantId, recordId: r.meta.id, partition: recordPartition(r.meta), subjectId: r.meta.subjectId, kind: r.meta.kind,
      purposes: r.meta.purposes, expiresAt: r.meta.expiresAt, version: r.meta.version, modelId: MODEL_ID, vector: seededVector(start + j),
    })));
    if ((start + batch.length - from) % 10_000 === 0 || start + batch.length === to) progress(`${label}: seeded ${start + batch.length}/${to} records below the API`);
  }
  for (let t = 0; t < tenants; t += 1) await state.generations.bump(tenantOf(t, tenants));
}
