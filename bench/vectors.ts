/**
 * `pnpm bench:vectors` (§6.7): the parts semantic retrieval is built from, measured alone.
 * - Embedding throughput of the local model on one thread, one text at a time (the
 *   vector-indexer's way; the issue asks ≥ 250 records/s per instance on one core).
 * - kNN latency of both vector indexes at 10,000 and 100,000 documents spread over 100 tenants,
 *   each query filtered to one tenant's partition (as the read path asks), and the same at
 *   100,000 documents in a single partition (the exact scan's worst case). Synthetic unit
 *   vectors: a kNN's cost does not depend on what the vectors mean.
 * Usage: pnpm bench:vectors [--embed 1000] [--queries 200] [--only sqlite|elasticsearch] (about 2 min)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MODELS, loadOnnxEmbeddingModel, modelDirOf, type ModelSpec } from '@gm/embedding';
import { createElasticsearchVectorIndex, createSqliteVectorIndex, type VectorDocument, type VectorIndex } from '@gm/search-index';
import { prng } from './corpus.ts';
import { resolveEngines } from './engines.ts';
import { perSecond, progress, summarize, type Summary } from './stats.ts';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]?.replace(/^--/, '') ?? '', process.argv[i + 1] ?? '');
const EMBED = Number(args.get('embed') ?? 1000);
const QUERIES = Number(args.get('queries') ?? 200);
const ONLY = args.get('only');
const DIMS = 384;
const TENANTS = 100;
const NOW = new Date().toISOString();
const LATER = new Date(Date.now() + 86_400_000).toISOString();

function unitVector(rand: () => number): Float32Array {
  const v = new Float32Array(DIMS);
  let sum = 0;
  for (let i = 0; i < DIMS; i += 1) {
    const x = rand() * 2 - 1;
    v[i] = x;
    sum += x * x;
  }
  const norm = Math.sqrt(sum);
  return v.map((x) => x / norm);
}

async function measureEmbedding(spec: ModelSpec): Promise<{ perSecond: number; latency: Summary }> {
  const model = await loadOnnxEmbeddingModel({ dir: modelDirOf(spec), threads: 1 });
  try {
    const rand = prng(11);
    const words = ['invoice', 'harbor', 'delivery', 'customer', 'prefers', 'email', 'phone', 'schedule', 'payment', 'warehouse', 'contract', 'renewal'];
    const texts = Array.from({ length: EMBED }, (_, i) => `Record ${i}: ${Array.from({ length: 12 }, () => words[Math.floor(rand() * words.length)]).join(' ')}.`);
    await model.embed(texts.slice(0, 20), 'document');
    const latencies: number[] = [];
    const started = performance.now();
    for (const text of texts) {
      const t = performance.now();
      await model.embed([text], 'document');
      latencies.push(performance.now() - t);
    }
    return { perSecond: perSecond(texts.length, performance.now() - started), latency: summarize(latencies) };
  } finally {
    await model.close();
  }
}

async function load(index: VectorIndex, size: number, partitionOf: (i: number) => { tenant: string; partition: string }): Promise<number> {
  const rand = prng(size);
  const started = performance.now();
  for (let from = 0; from < size; from += 1000) {
    const docs: VectorDocument[] = [];
    for (let i = from; i < Math.min(size, from + 1000); i += 1) {
      const { tenant, partition } = partitionOf(i);
      docs.push({
        tenantId: tenant, recordId: `r-${i}`, partition, subjectId: `s-${i % 50}`, kind: 'fact', purposes: ['support'],
        expiresAt: LATER, version: 1, modelId: 'bench', vector: unitVector(rand),
      });
    }
    await index.upsert(docs);
  }
  return perSecond(size, performance.now() - started);
}

async function queries(index: VectorIndex, tenantOf: (q: number) => { tenant: string; partition: string }, count: number): Promise<Summary> {
  const rand = prng(99);
  const latencies: number[] = [];
  for (let q = 0; q < count + 10; q += 1) {
    const { tenant, partition } = tenantOf(q);
    const t = performance.now();
    await index.knn({ tenantId: tenant, partitions: [partition], purpose: 'support', now: NOW, modelId: 'bench', vector: unitVector(rand), k: 10 });
    if (q >= 10) latencies.push(performance.now() - t);
  }
  return summarize(latencies);
}

const spread = (i: number) => ({ tenant: `t-${i % TENANTS}`, partition: `t-${i % TENANTS}/project/maple/team` });
const single = () => ({ tenant: 't-0', partition: 't-0/project/maple/team' });
const fmt = (s: Summary) => `p50 ${s.p50.toFixed(2)} ms, p95 ${s.p95.toFixed(2)} ms`;

const lines: string[] = [];
// Every model the runtime can use, one after the other on the same texts (the first is the default).
for (const spec of Object.values(MODELS)) {
  const embedding = await measureEmbedding(spec);
  progress(`embedding (${spec.name}): ${embedding.perSecond.toFixed(0)} texts/s on one thread, one at a time (${fmt(embedding.latency)})`);
  lines.push(`embedding, ${spec.name}, one thread, one text per run: ${embedding.perSecond.toFixed(0)} texts/s (${fmt(embedding.latency)}; target ≥ 250/s)${embedding.perSecond >= 250 ? '' : '  MISSED'}`);
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-vectors-'));
try {
  const engines = ONLY === 'sqlite' ? undefined : await resolveEngines();
  const stores: Array<[string, (tag: string) => VectorIndex]> = [];
  if (ONLY !== 'elasticsearch') stores.push(['sqlite (exact scan)', (tag) => createSqliteVectorIndex({ file: path.join(scratch, `${tag}.db`) })]);
  if (engines) {
    const prefix = `gm-bench-vectors-${randomBytes(3).toString('hex')}`;
    stores.push(['elasticsearch (HNSW)', (tag) => createElasticsearchVectorIndex({ node: engines.elasticsearchUrl, indexPrefix: `${prefix}-${tag}`, dimensions: DIMS })]);
  }
  for (const [name, open] of stores) {
    for (const [size, shape, partitionOf] of [[10_000, '100 tenants', spread], [100_000, '100 tenants', spread], [100_000, 'one partition', single]] as const) {
      const index = open(`${size}-${shape === 'one partition' ? 'one' : 'spread'}`);
      try {
        const loadRate = await load(index, size, partitionOf);
        // The single partition is the exact scan's worst case (most of a second a query): fewer of those.
        const latency = await queries(index, shape === 'one partition' ? single : (q) => spread(q), shape === 'one partition' ? Math.min(QUERIES, 30) : QUERIES);
        const line = `${name} kNN k=10 @${size} (${shape}, ${size / (shape === 'one partition' ? 1 : TENANTS)} candidates per query): ${fmt(latency)}; loaded ${loadRate.toFixed(0)} vectors/s`;
        progress(line);
        lines.push(line);
      } finally {
        await index.clear();
        await index.close();
      }
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.stdout.write(`${lines.join('\n')}\n`);
