import { describe, expect, it, onTestFinished } from 'vitest';
import type { VectorDocument, VectorIndex, VectorQuery } from '@gm/search-index';
import { intercept } from '../intercept.ts';

export interface VectorIndexHarness {
  index: VectorIndex;
  /** The dimensions the index was created for. */
  dimensions: number;
  cleanup: () => Promise<void>;
}

/**
 * What every vector index behind the port must do (§6.7): nearest neighbours *within* the
 * filters of the lexical index, so the partition-first rule holds for semantic retrieval too.
 */
export function testVectorIndex(name: string, open: () => Promise<VectorIndexHarness>): void {
  describe(`vector index contract: ${name}`, () => {
    const NOW = '2026-12-01T12:00:00.000Z';
    const LATER = '2027-12-01T12:00:00.000Z';

    /**
     * A fresh index whose `upsert` is followed by `visible`: what a reader waits for before it
     * must see a write (an index may make upserts visible lazily, the vector-indexer's does).
     */
    async function fresh(): Promise<VectorIndexHarness> {
      const h = await open();
      onTestFinished(() => h.cleanup());
      return { ...h, index: intercept(h.index, 'upsert', async (upsert, docs) => {
        await upsert(docs);
        await h.index.visible();
      }) };
    }
    /** A unit vector pointing mostly along `axis`, tilted towards `towards` by `tilt`. */
    const unit = (dims: number, axis: number, towards = (axis + 1) % dims, tilt = 0): Float32Array => {
      const v = new Float32Array(dims);
      v[axis] = 1;
      v[towards] = (v[towards] ?? 0) + tilt;
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    };
    const doc = (dims: number, recordId: string, vector: Float32Array, overrides: Partial<VectorDocument> = {}): VectorDocument => ({
      tenantId: 'tenant-1', recordId, partition: 'part-a', subjectId: 'subject-1', kind: 'fact', purposes: ['support'],
      expiresAt: LATER, version: 1, modelId: 'model-1', vector, ...overrides,
    });
    const query = (vector: Float32Array, overrides: Partial<VectorQuery> = {}): VectorQuery => ({
      tenantId: 'tenant-1', partitions: ['part-a'], purpose: 'support', now: NOW, modelId: 'model-1', vector, k: 10, ...overrides,
    });

    it('returns the k nearest, most similar first, with their cosine similarity', async () => {
      const { index, dimensions: d } = await fresh();
      await index.upsert([doc(d, 'far', unit(d, 3)), doc(d, 'near', unit(d, 0, 1, 0.1)), doc(d, 'nearer', unit(d, 0, 1, 0.01)), doc(d, 'mid', unit(d, 0, 1, 1))]);
      const hits = await index.knn(query(unit(d, 0), { k: 3 }));
      expect(hits.map((h) => h.recordId)).toEqual(['nearer', 'near', 'mid']);
      expect(hits[0]?.similarity).toBeCloseTo(1, 3);
      expect(hits[2]?.similarity).toBeCloseTo(Math.SQRT1_2, 3);
      expect(hits[0]?.partition).toBe('part-a');
    });

    it('never returns a record of a partition it was not given, even the exact nearest neighbour, and reads nothing for none', async () => {
      const { index, dimensions: d } = await fresh();
      await index.upsert([
        doc(d, 'secret', unit(d, 0), { partition: 'part-secret' }),
        doc(d, 'allowed', unit(d, 0, 1, 2)),
      ]);
      const hits = await index.knn(query(unit(d, 0), { k: 1 }));
      expect(hits.map((h) => h.recordId)).toEqual(['allowed']);
      expect(await index.knn(query(unit(d, 0), { partitions: [] }))).toEqual([]);
      expect((await index.knn(query(unit(d, 0), { partitions: ['part-secret'] }))).map((h) => h.recordId)).toEqual(['secret']);
    });

    it('filters by tenant, purpose, expiry, kind, subject and model inside the search', async () => {
      const { index, dimensions: d } = await fresh();
      const v = unit(d, 0);
      await index.upsert([
        doc(d, 'other-tenant', v, { tenantId: 'tenant-2' }),
        doc(d, 'other-purpose', v, { purposes: ['billing'] }),
        doc(d, 'expired', v, { expiresAt: NOW }),
        doc(d, 'a-preference', v, { kind: 'preference' }),
        doc(d, 'other-subject', v, { subjectId: 'subject-2' }),
        doc(d, 'other-model', v, { modelId: 'model-2' }),
        doc(d, 'match', unit(d, 0, 1, 3)),
      ]);
      expect((await index.knn(query(v, { k: 1 }))).map((h) => h.recordId)).not.toContain('other-tenant');
      const all = (await index.knn(query(v))).map((h) => h.recordId).sort();
      expect(all).toEqual(['a-preference', 'match', 'other-subject']);
      expect((await index.knn(query(v, { kinds: ['fact'], subjectId: 'subject-1' }))).map((h) => h.recordId)).toEqual(['match']);
      expect((await index.knn(query(v, { tenantId: 'tenant-2' }))).map((h) => h.recordId)).toEqual(['other-tenant']);
    });

    it('replaces by id, never with an older version; removes idempotently', async () => {
      const { index, dimensions: d } = await fresh();
      await index.upsert([doc(d, 'r', unit(d, 0), { version: 2 })]);
      await index.upsert([doc(d, 'r', unit(d, 1), { version: 1 })]);
      expect((await index.knn(query(unit(d, 0))))[0]?.similarity).toBeCloseTo(1, 3);
      await index.upsert([doc(d, 'r', unit(d, 1), { version: 3 })]);
      expect((await index.knn(query(unit(d, 1))))[0]?.similarity).toBeCloseTo(1, 3);
      expect(await index.count('tenant-1')).toBe(1);
      expect(await index.has('tenant-1', 'r')).toBe(true);
      expect(await index.remove('tenant-1', ['r', 'never'])).toBe(1);
      expect(await index.remove('tenant-1', ['r'])).toBe(0);
      expect(await index.has('tenant-1', 'r')).toBe(false);
      expect(await index.knn(query(unit(d, 1)))).toEqual([]);
    });

    it('gives back the stored vectors of records by id, only of the model asked, only of the tenant asked', async () => {
      const { index, dimensions: d } = await fresh();
      const tilted = unit(d, 0, 1, 0.3);
      await index.upsert([doc(d, 'a', tilted), doc(d, 'b', unit(d, 1), { modelId: 'model-2' }), doc(d, 'c', unit(d, 2), { tenantId: 'tenant-2' })]);
      const found = await index.vectorsOf('tenant-1', ['a', 'b', 'c', 'never'], 'model-1');
      expect([...found.keys()]).toEqual(['a']);
      const back = found.get('a');
      expect(back?.length).toBe(d);
      // Float32 in, float32 out: the very vector (Elasticsearch keeps it as float).
      back?.forEach((x, i) => expect(x).toBeCloseTo(tilted[i] ?? Number.NaN, 6));
      expect([...(await index.vectorsOf('tenant-1', ['b'], 'model-2')).keys()]).toEqual(['b']);
      expect((await index.vectorsOf('tenant-1', [], 'model-1')).size).toBe(0);
    });

    it('names the models whose vectors it holds, none once cleared', async () => {
      const { index, dimensions: d } = await fresh();
      expect(await index.modelIds()).toEqual([]);
      await index.upsert([doc(d, 'a', unit(d, 0), { modelId: 'model-2' }), doc(d, 'b', unit(d, 1)), doc(d, 'c', unit(d, 2))]);
      expect(await index.modelIds()).toEqual(['model-1', 'model-2']);
      await index.clear();
      expect(await index.modelIds()).toEqual([]);
    });

    it('refuses a vector that is not finite numbers, writing nothing', async () => {
      const { index, dimensions: d } = await fresh();
      const bad = unit(d, 0);
      bad[1] = Number.NaN;
      await expect(index.upsert([doc(d, 'ok', unit(d, 0)), doc(d, 'bad', bad)])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      expect(await index.count()).toBe(0);
    });
  });
}
