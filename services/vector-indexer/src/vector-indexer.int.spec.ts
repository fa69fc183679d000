/**
 * The vector-indexer on real embedded stores with the real model: write-admission decides
 * commands, the vector-indexer folds the events into a SQLite vector index. Active records get a
 * vector that a paraphrase finds; quarantined, deleted and superseded ones have none.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCommand, TOPICS, subjectKey, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, partitionKey } from '@gm/domain';
import { loadOnnxEmbeddingModel, type EmbeddingModel } from '@gm/embedding';
import { createLogger, createMetrics } from '@gm/observability';
import { createSqliteVectorIndex, type VectorIndex } from '@gm/search-index';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from '@gm/write-admission';
import { TEST_WRITER, openEmbeddedFixture, writeMemoryCommand, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { VECTOR_INDEXER_GROUP, startVectorIndexer } from './vector-indexer.ts';

const PARTITION = partitionKey({ tenantId: 'acme', resource: { kind: 'project', id: 'maple' }, visibility: 'team', sensitivity: 'normal', ownerPrincipalId: TEST_WRITER.principalId });

describe('vector-indexer', () => {
  let fx: EmbeddedFixture;
  let model: EmbeddingModel;
  let vectors: VectorIndex;
  const services: ServiceHandle[] = [];
  /** What the keyword index would answer for a record a batch promoted without its content. */
  const keywordContents = new Map<string, string>();
  let n = 0;

  beforeAll(async () => {
    fx = await openEmbeddedFixture({ partitions: 2 });
    model = await loadOnnxEmbeddingModel();
    vectors = createSqliteVectorIndex({ file: path.join(fx.dir, 'vectors.db') });
    services.push(
      await startWriteAdmission({
        bus: fx.bus, log: createLogger({ name: 'spec', level: 'silent' }), metrics: createMetrics(),
        decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
        snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 1_000 },
      }),
      await startVectorIndexer({ bus: fx.bus, vectors, model, contentOf: async (_tenant, id) => keywordContents.get(id) }),
    );
  }, 60_000);
  afterAll(async () => {
    for (const s of services) await s.close();
    await vectors?.close();
    await model?.close();
    await fx?.close();
  });

  /** Sends commands and waits until write-admission and then the vector-indexer passed all of them. */
  async function run(commands: MemoryCommand[]): Promise<void> {
    await fx.bus.produce(commands.map((c) => ({ topic: TOPICS.commands, key: subjectKey('acme', c.metadata.subjectId), value: c })));
    for (const [group, topic] of [[WRITE_ADMISSION_GROUP, TOPICS.commands], [VECTOR_INDEXER_GROUP, TOPICS.events]] as const) {
      for (const [partition, end] of (await fx.bus.endOffsets(topic)).entries()) {
        if (end > 0) expect(await fx.bus.waitForCommitted(group, { topic, partition, offset: end - 1 }, 20_000)).toBe(true);
      }
    }
  }
  const write = (id: string, content: string, extra: Record<string, unknown> = {}) =>
    writeMemoryCommand({ commandId: `cmd-${++n}`, tenantId: 'acme', subjectId: 'cust-42', now: fx.clock.iso() }, { id, content, ...extra });
  const nearest = async (text: string, k = 1) => {
    const [vector] = await model.embed([text], 'query');
    return (await vectors.knn({ tenantId: 'acme', partitions: [PARTITION], purpose: 'support', now: fx.clock.iso(), modelId: model.modelId, vector: vector as Float32Array, k }))
      .map((h) => h.recordId);
  };

  it('embeds active records, so a paraphrase in other words finds the right one', async () => {
    await run([
      write('pref-email', 'Customer 42 prefers email over phone calls'),
      write('invoice', 'The March invoice was paid by bank transfer'),
      write('shipping', 'Parcels to the harbor warehouse ship on Tuesdays'),
    ]);
    expect(await nearest('the client would rather be contacted by e-mail')).toEqual(['pref-email']);
    expect(await nearest('when do deliveries to the port depot go out?')).toEqual(['shipping']);
    expect(await vectors.count('acme')).toBe(3);
  });

  it('gives a quarantined write no vector, and removes the vector of a deleted record', async () => {
    await run([write('untrusted', 'Customer 42 wants every call recorded', { trust: 'untrusted' })]);
    expect(await vectors.has('acme', 'untrusted')).toBe(false);
    await run([MemoryCommand.parse({
      type: 'DeleteMemory', data: { id: 'invoice', jobId: 'job-1' },
      metadata: { commandId: `cmd-${++n}`, tenantId: 'acme', subjectId: 'cust-42', now: fx.clock.iso(), actor: TEST_WRITER, policyRevision: 1 },
    })]);
    expect(await vectors.has('acme', 'invoice')).toBe(false);
    expect(await nearest('the March bill was settled by wire', 3)).not.toContain('invoice');
  });

  it('indexes a writer\'s own vector as sent (unit length), and embeds the content of a write whose vector is of another model or size', async () => {
    const axis = (i: number, length = model.dimensions, scale = 1) => Array.from({ length }, (_, d) => (d === i ? scale : 0));
    const byVector = async (vector: number[]) =>
      vectors.knn({ tenantId: 'acme', partitions: [PARTITION], purpose: 'support', now: fx.clock.iso(), modelId: model.modelId, vector: Float32Array.from(vector), k: 1 });
    await run([
      // Past the edge (a command produced directly): not normalised, yet indexed at unit length.
      write('own-vector', 'The loading dock closes at six', { embedding: { model: model.modelId, vector: axis(5, model.dimensions, 40) } }),
      write('other-model', 'Forklifts are serviced every spring', { embedding: { model: 'text-embedding-3-small', vector: axis(6) } }),
      write('other-size', 'Pallets are stacked four high', { embedding: { model: model.modelId, vector: axis(7, 8) } }),
    ]);
    const [own] = await byVector(axis(5));
    expect(own).toMatchObject({ recordId: 'own-vector' });
    expect(own?.similarity).toBeCloseTo(1, 5);
    // The other two were embedded from their content: their meaning finds them, their vectors do not.
    expect(await nearest('when is the lift truck maintenance?')).toEqual(['other-model']);
    expect(await nearest('how high can the skids be piled?')).toEqual(['other-size']);
    expect((await byVector(axis(6)))[0]?.similarity ?? 0).toBeLessThan(0.5);
    // An update without a vector is its new content's.
    await run([write('own-vector', 'Invoices are archived after seven years', { expectedVersion: 1 })]);
    expect(await nearest('how long are bills kept?')).toEqual(['own-vector']);
    expect((await byVector(axis(5)))[0]?.recordId).not.toBe('own-vector');
  });

  it('keeps a record\'s vector, a writer\'s own, through a later promotion that widens its visibility', async () => {
    const axis = Array.from({ length: model.dimensions }, (_, d) => (d === 9 ? 1 : 0));
    await run([write('widened', 'The night shift starts at ten', { visibility: 'private', embedding: { model: model.modelId, vector: axis } })]);
    keywordContents.set('widened', 'The night shift starts at ten');
    // Another batch: the promotion carries no content, and the vector stored for version 1 stays.
    await run([MemoryCommand.parse({
      type: 'PromoteMemory', data: { id: 'widened', expectedVersion: 1, visibility: 'team' },
      metadata: { commandId: `cmd-${++n}`, tenantId: 'acme', subjectId: 'cust-42', now: fx.clock.iso(), actor: { ...TEST_WRITER, agentId: 'reviewer-bot', principalId: 'rita' }, policyRevision: 1 },
    })]);
    const [hit] = await vectors.knn({ tenantId: 'acme', partitions: [PARTITION], purpose: 'support', now: fx.clock.iso(), modelId: model.modelId, vector: Float32Array.from(axis), k: 1 });
    // Found in the team partition it was promoted to, at version 2, by the writer's vector.
    expect(hit).toMatchObject({ recordId: 'widened', partition: PARTITION });
    expect(hit?.similarity).toBeCloseTo(1, 5);
  });

  it('embeds every active record again when it starts beside vectors of another model, which no search would compare', async () => {
    // The indexer stops; what it wrote is replaced by one vector of an older model.
    await services.pop()?.close();
    await vectors.clear();
    const old = new Float32Array(model.dimensions).fill(1 / Math.sqrt(model.dimensions));
    await vectors.upsert([{
      tenantId: 'acme', recordId: 'pref-email', partition: PARTITION, subjectId: 'cust-42', kind: 'fact', purposes: ['support'],
      expiresAt: new Date(Date.parse(fx.clock.iso()) + 86_400_000).toISOString(), version: 1, modelId: 'an-older-model@1', vector: old,
    }]);
    const rebuilt: string[][] = [];
    services.push(await startVectorIndexer({ bus: fx.bus, vectors, model, contentOf: async () => undefined, onRebuild: (stale) => rebuilt.push(stale) }));
    await run([]);
    expect(rebuilt).toEqual([['an-older-model@1']]);
    expect(await vectors.modelIds()).toEqual([model.modelId]);
    // Every record active in the log has its vector again (the deleted and the quarantined ones none).
    expect(await nearest('the client would rather be contacted by e-mail')).toEqual(['pref-email']);
    expect(await vectors.count('acme')).toBe(6);
  });
});
