import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeletionAck, TOPICS, type DeletionTask, type ServiceHandle } from '@gm/contracts';
import { createSqliteSummaryStore, type SummaryStore } from '@gm/search-index';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { intercept } from '@gm/testing/intercept';
import { INDEX_BUILDER_GROUP } from './index-builder.ts';
import { INDEX_TARGETS_GROUP, startIndexTargets } from './index-targets.ts';

/** The index-builder's deletion worker on the real SQLite bus and stores. */
describe('index-builder: the keyword and summary deletion targets', () => {
  let f: EmbeddedFixture;
  let summaries: SummaryStore;
  let targets: ServiceHandle | undefined;
  let indexBuilder: ServiceHandle | undefined;

  beforeEach(async () => {
    f = await openEmbeddedFixture();
    summaries = createSqliteSummaryStore({ file: path.join(f.dir, 'summaries.db') });
  });
  afterEach(async () => {
    await indexBuilder?.close();
    await targets?.close();
    await summaries.close();
    await f.close();
  });

  it('runs a job\'s summary task while its keyword task is still removing, and acks both', async () => {
    // The keyword removal finishes only once the summary rebuild has begun: one after the other,
    // the two would wait on each other for ever.
    let summaryBegun: () => void = () => undefined;
    const begun = new Promise<void>((resolve) => (summaryBegun = resolve));
    const index = intercept(f.index, 'remove', async (remove, ...args) => {
      await begun;
      return remove(...args);
    });
    const store = intercept(summaries, 'holding', (holding, ...args) => {
      summaryBegun();
      return holding(...args);
    });
    targets = await startIndexTargets({ bus: f.bus, index, clock: f.clock, summaries: { store, state: f.state } });

    const task = (target: 'keyword' | 'summary'): DeletionTask => ({
      jobId: 'job-1', tenantId: 'tenant-1', target, recordIds: ['rec-1'], retainPrimary: false, issuedAt: f.clock.now().toISOString(),
    });
    const [, last] = await f.bus.produce([
      { topic: TOPICS.deletionTasks, key: 'job-1', value: task('keyword') },
      { topic: TOPICS.deletionTasks, key: 'job-1', value: task('summary') },
    ]);
    expect(await f.bus.waitForCommitted(INDEX_TARGETS_GROUP, last as NonNullable<typeof last>, 10_000)).toBe(true);
    const acks = (await f.readTopic(TOPICS.deletionAcks)).map((m) => DeletionAck.parse(m.value));
    expect(acks.map((a) => [a.target, a.evidence.status]).sort()).toEqual([['keyword', 'done'], ['summary', 'done']]);
  });

  it('acks a keyword removal only after the index-builder passed the log, so a document it was still writing is gone too', async () => {
    // The record's write and its tombstone, in the log before the job's task.
    await f.bus.produce([
      { topic: TOPICS.events, key: 'subject-1', value: { event: 'written' } },
      { topic: TOPICS.events, key: 'subject-1', value: { event: 'tombstoned' } },
    ]);
    // The target tells us when it has the task in hand: it removes at once, or it waits for the index-builder first.
    let taken: () => void = () => undefined;
    const taskTaken = new Promise<void>((resolve) => (taken = resolve));
    const bus = intercept(f.bus, 'waitForCommitted', (waitForCommitted, ...args) => {
      if (args[0] === INDEX_BUILDER_GROUP) taken();
      return waitForCommitted(...args);
    });
    const index = intercept(f.index, 'remove', (remove, ...args) => {
      taken();
      return remove(...args);
    });
    targets = await startIndexTargets({ bus, index, clock: f.clock });
    const task: DeletionTask = {
      jobId: 'job-1', tenantId: 'tenant-1', target: 'keyword', recordIds: ['rec-1'], retainPrimary: false, issuedAt: f.clock.iso(),
    };
    const [taskAt] = await f.bus.produce([{ topic: TOPICS.deletionTasks, key: 'job-1', value: task }]);

    // The index-builder's batch holding the write lands its document only once the target has the task.
    indexBuilder = await f.bus.subscribe({
      groupId: INDEX_BUILDER_GROUP, topics: [TOPICS.events],
      handler: async (message) => {
        if ((message.value as { event: string }).event !== 'written') return;
        await taskTaken;
        await f.index.upsert([{
          tenantId: 'tenant-1', recordId: 'rec-1', partition: 'p', subjectId: 'subject-1', kind: 'fact', purposes: ['support'],
          content: 'Customer 42 prefers email', contentHash: 'h', confidence: 0.9, createdAt: f.clock.iso(),
          expiresAt: new Date(Date.parse(f.clock.iso()) + 86_400_000).toISOString(), version: 1, provenance: [],
        }]);
      },
    });

    expect(await f.bus.waitForCommitted(INDEX_TARGETS_GROUP, taskAt as NonNullable<typeof taskAt>, 20_000)).toBe(true);
    const acks = (await f.readTopic(TOPICS.deletionAcks)).map((m) => DeletionAck.parse(m.value));
    expect(acks.map((a) => [a.target, a.evidence.status, a.evidence.ref])).toEqual([['keyword', 'done', 'removed=1;remaining=0']]);
    expect(await f.index.get('tenant-1', 'rec-1')).toBeNull();
  });
});
