/**
 * The `vector` deletion target on the real SQLite bus and vector index, beside a stand-in for
 * the vector-indexer group whose batch is still writing a vector of the job's record.
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeletionAck, TOPICS, type DeletionTask, type ServiceHandle } from '@gm/contracts';
import { createSqliteVectorIndex, type VectorIndex } from '@gm/search-index';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { intercept } from '@gm/testing/intercept';
import { VECTOR_INDEXER_GROUP } from './vector-indexer.ts';
import { VECTOR_TARGETS_GROUP, startVectorTargets } from './vector-targets.ts';

describe('vector-indexer: the vector deletion target', () => {
  let f: EmbeddedFixture;
  let vectors: VectorIndex;
  const handles: ServiceHandle[] = [];

  beforeEach(async () => {
    f = await openEmbeddedFixture();
    vectors = createSqliteVectorIndex({ file: path.join(f.dir, 'vectors.db') });
  });
  afterEach(async () => {
    for (const h of handles.splice(0)) await h.close();
    await vectors.close();
    await f.close();
  });

  it('acks a removal only after the vector-indexer passed the log, so a vector it was still writing is gone too', async () => {
    const dimensions = 4;
    const vectorOf = (recordId: string) => ({
      tenantId: 'tenant-1', recordId, partition: 'p', subjectId: 'subject-1', kind: 'fact' as const, purposes: ['support'],
      expiresAt: new Date(Date.parse(f.clock.iso()) + 86_400_000).toISOString(), version: 1, modelId: 'model@1',
      vector: new Float32Array(dimensions).fill(0.5),
    });
    // The record's write and its tombstone, in the log before the job's task.
    await f.bus.produce([
      { topic: TOPICS.events, key: 'subject-1', value: { event: 'written' } },
      { topic: TOPICS.events, key: 'subject-1', value: { event: 'tombstoned' } },
    ]);

    // The target tells us when it has the task in hand: it removes at once, or it waits for the indexer first.
    let taken: () => void = () => undefined;
    const taskTaken = new Promise<void>((resolve) => (taken = resolve));
    const targetBus = intercept(f.bus, 'waitForCommitted', (waitForCommitted, ...args) => {
      if (args[0] === VECTOR_INDEXER_GROUP) taken();
      return waitForCommitted(...args);
    });
    const targetVectors = intercept(vectors, 'remove', (remove, ...args) => {
      taken();
      return remove(...args);
    });
    handles.push(await startVectorTargets({ bus: targetBus, vectors: targetVectors, clock: f.clock }));
    const task: DeletionTask = {
      jobId: 'job-1', tenantId: 'tenant-1', target: 'vector', recordIds: ['rec-1'], retainPrimary: false, issuedAt: f.clock.iso(),
    };
    const [taskAt] = await f.bus.produce([{ topic: TOPICS.deletionTasks, key: 'job-1', value: task }]);

    // The vector-indexer's batch holding the write lands its vector only once the target has the task.
    handles.push(await f.bus.subscribe({
      groupId: VECTOR_INDEXER_GROUP, topics: [TOPICS.events],
      handler: async (message) => {
        if ((message.value as { event: string }).event !== 'written') return;
        await taskTaken;
        await vectors.upsert([vectorOf('rec-1')]);
      },
    }));

    expect(await f.bus.waitForCommitted(VECTOR_TARGETS_GROUP, taskAt as NonNullable<typeof taskAt>, 20_000)).toBe(true);
    const acks = (await f.readTopic(TOPICS.deletionAcks)).map((m) => DeletionAck.parse(m.value));
    expect(acks.map((a) => [a.target, a.evidence.status, a.evidence.ref])).toEqual([['vector', 'done', 'removed=1;remaining=0']]);
    expect(await vectors.has('tenant-1', 'rec-1')).toBe(false);
  });
});
