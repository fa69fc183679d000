import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeletionAck, TOPICS, type DeletionTask, type ServiceHandle } from '@gm/contracts';
import { createSqliteSummaryStore, type SearchIndex, type SummaryStore } from '@gm/search-index';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { INDEX_TARGETS_GROUP, startIndexTargets } from './index-targets.ts';

/** The index-builder's deletion worker on the real SQLite bus and stores. */
describe('index-builder: the keyword and summary deletion targets', () => {
  let f: EmbeddedFixture;
  let summaries: SummaryStore;
  let targets: ServiceHandle | undefined;

  beforeEach(async () => {
    f = await openEmbeddedFixture();
    summaries = createSqliteSummaryStore({ file: path.join(f.dir, 'summaries.db') });
  });
  afterEach(async () => {
    await targets?.close();
    await summaries.close();
    await f.close();
  });

  it('runs a job\'s summary task while its keyword task is still removing, and acks both', async () => {
    // The keyword removal finishes only once the summary rebuild has begun: one after the other,
    // the two would wait on each other for ever.
    let summaryBegun: () => void = () => undefined;
    const begun = new Promise<void>((resolve) => (summaryBegun = resolve));
    const index = new Proxy(f.index, {
      get: (target, name, receiver) => (name === 'remove'
        ? async (...args: Parameters<SearchIndex['remove']>) => {
          await begun;
          return target.remove(...args);
        }
        : Reflect.get(target, name, receiver)),
    });
    const store = new Proxy(summaries, {
      get: (target, name, receiver) => (name === 'holding'
        ? (...args: Parameters<SummaryStore['holding']>) => {
          summaryBegun();
          return target.holding(...args);
        }
        : Reflect.get(target, name, receiver)),
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
});
