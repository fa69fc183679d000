import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutgoingMessage, ProcessContext } from '@gm/bus';
import { TOPICS, type DeletionAck, type DeletionTask, type MemoryEvent } from '@gm/contracts';
import { createSqliteSummaryStore, type SummaryStore } from '@gm/search-index';
// The test fixtures, the decider's fixtures and the projector: devDependencies, for this spec only.
import { TestClock, openEmbeddedFixture, sha256Hex, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import {
  DAY, HOUR, SUBJECT, T0, TENANT, after, deleteMemory, forget, history, promote, tombstone, write,
} from '@gm/domain/fixtures';
import { projectEvents } from '@gm/projector';
import { indexEvent } from './index-builder.ts';
import { summarizeEvent, summarizeEvents, summaryTargetHandler } from './summaries.ts';
import { buildSummaries } from '@gm/domain';

/*
 * The index-builder's summary fold on real SQLite stores, driven by the events the decider
 * really emits: projector and index-builder are applied by hand, so each test chooses their
 * interleaving (the projector may run ahead of the index-builder, as it does live).
 */
describe('index-builder: summaries kept in step with the active records', () => {
  let f: EmbeddedFixture;
  let summaries: SummaryStore;
  const deps = () => ({ index: f.index, summaries, state: f.state });

  beforeEach(async () => {
    // The deletion worker reads this clock; the decider's events start at T0.
    f = await openEmbeddedFixture({ clock: new TestClock(Date.parse(after(T0, DAY))) });
    summaries = createSqliteSummaryStore({ file: path.join(f.dir, 'summaries.db') });
  });
  afterEach(async () => {
    await summaries.close();
    await f.close();
  });

  const project = async (events: MemoryEvent[]) => {
    for (const e of events) await projectEvents(f.state, [e]);
  };
  const build = async (events: MemoryEvent[]) => {
    for (const e of events) {
      await indexEvent(f.index, e);
      await summarizeEvent(deps(), e);
    }
  };
  const apply = async (events: MemoryEvent[]) => {
    await project(events);
    await build(events);
  };
  const partitionOf = async (id: string) => (await f.index.get(TENANT, id))?.partition ?? '';
  const support = async (partition: string) => (await summaries.get(TENANT, partition, SUBJECT)).find((s) => s.purpose === 'support');

  const facts = [
    write(T0, { id: 'f1', visibility: 'team', content: 'Ada prefers email. She said so twice.', contentHash: sha256Hex('Ada prefers email. She said so twice.'), confidence: 0.9 }),
    write(after(T0, HOUR), { id: 'f2', visibility: 'team', content: 'Ada lives in Lisbon.', contentHash: sha256Hex('Ada lives in Lisbon.'), confidence: 0.7 }),
    write(after(T0, 2 * HOUR), { id: 'f3', visibility: 'team', content: 'Ada works nights.', contentHash: sha256Hex('Ada works nights.'), confidence: 0.7 }),
  ];

  const context = (sent: OutgoingMessage[]): ProcessContext => ({
    send: (m) => void sent.push(...m), sendWithPositions: () => undefined, onCommitted: () => undefined, onDiscarded: () => undefined,
  });

  async function runTask(target: DeletionTask['target'], recordIds: string[]): Promise<DeletionAck> {
    const sent: OutgoingMessage[] = [];
    const task: DeletionTask = { jobId: 'job-1', tenantId: TENANT, target, recordIds, retainPrimary: false, issuedAt: after(T0, DAY) };
    await summaryTargetHandler(deps(), f.clock)(
      { topic: TOPICS.deletionTasks, partition: 0, offset: 0, key: 'job-1', value: task, headers: {}, timestamp: 0 },
      context(sent),
    );
    expect(sent).toHaveLength(1);
    return sent[0]?.value as DeletionAck;
  }

  it('summarises three facts, best first, deriving from exactly those three', async () => {
    await apply(history(facts));
    const summary = await support(await partitionOf('f1'));
    expect(summary?.text).toBe('Ada prefers email.\nAda works nights.\nAda lives in Lisbon.');
    expect(summary?.derivedFrom.map((d) => d.recordId)).toEqual(['f1', 'f2', 'f3']);
    expect(await summaries.count()).toBe(1);
  });

  it('a subject of 300 facts: reads the top of each purpose’s ranking only, and builds exactly what every source would give', async () => {
    // Deterministic variety: tied and near-tied confidences, long lines the length bound skips,
    // repeated lines, two purposes, some expired, one deleted.
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const commands = Array.from({ length: 300 }, (_, i) => {
      const content = i % 17 === 0 ? `Ada repeats herself about the weather ${i % 3}.` : `Fact ${i} about Ada: ${'detail '.repeat(Math.floor(random() * 40))}end.`;
      return write(after(T0, i * 1_000), {
        id: `big-${i}`, visibility: 'team', content, contentHash: sha256Hex(content),
        confidence: [0.5, 0.9, 0.6999999999999999, 0.7][Math.floor(random() * 4)] ?? 0.5,
        purposes: i % 5 === 0 ? ['support', 'billing'] : ['support'],
        ...(i % 11 === 0 && i < 150 ? { expiresAt: after(T0, 150_000) } : {}),
      });
    });
    const events = history([...commands, deleteMemory(after(T0, 400_000), { id: 'big-1' })]);
    await project(events);
    const read: string[] = [];
    const counted = new Proxy(f.index, {
      get: (target, name, receiver) => {
        if (name === 'subjectDocumentsRanked') {
          return async (q: Parameters<typeof target.subjectDocumentsRanked>[0]) => {
            const page = await target.subjectDocumentsRanked(q);
            read.push(...page.documents.map((d) => d.recordId));
            return page;
          };
        }
        return Reflect.get(target, name, receiver);
      },
    });
    for (const e of events) await indexEvent(f.index, e);
    // One batch of all of them: the scope is rebuilt once, at the last event's time.
    await summarizeEvents({ index: counted, summaries, state: f.state }, events);

    const partition = await partitionOf('big-0');
    // Stamped, and expiry judged, at the last event that touched the scope: the last write.
    const now = (events.filter((e) => e.type === 'MemoryWritten').at(-1) as MemoryEvent).metadata.now;
    // Expected from the log itself: every record written, less the deleted one.
    const every = events.flatMap((e) => (e.type === 'MemoryWritten' && e.data.record.id !== 'big-1' ? [e.data.record] : []))
      .map((r) => ({ recordId: r.id, version: r.version, contentHash: r.contentHash, content: r.content, kind: r.kind, purposes: r.purposes, confidence: r.confidence, createdAt: r.createdAt, expiresAt: r.expiresAt }));
    expect(every).toHaveLength(299);
    const expected = buildSummaries(every, now).map((b) => ({ tenantId: TENANT, partition, subjectId: SUBJECT, updatedAt: now, ...b }));
    expect(await summaries.get(TENANT, partition, SUBJECT)).toEqual(expected);
    expect(expected.map((e) => e.purpose)).toEqual(['billing', 'support']);
    // A page or two per purpose, not the subject's 300 documents.
    expect(read.length).toBeLessThanOrEqual(4 * 32);
    expect(every.filter((d) => Date.parse(d.expiresAt) <= Date.parse(now)).length).toBeGreaterThan(5);
  });

  it('is idempotent under redelivery: the same events again change nothing', async () => {
    const events = history(facts);
    await apply(events);
    const digest = await summaries.digest();
    const stored = await summaries.get(TENANT, await partitionOf('f1'), SUBJECT);
    await build(events);
    expect(await summaries.digest()).toBe(digest);
    expect(await summaries.get(TENANT, await partitionOf('f1'), SUBJECT)).toEqual(stored);
  });

  it('rebuilds on supersession: the old text is gone, the correction is in', async () => {
    const events = history([
      ...facts,
      write(after(T0, 3 * HOUR), { id: 'f2b', visibility: 'team', content: 'Ada moved to Porto.', contentHash: sha256Hex('Ada moved to Porto.'), confidence: 0.7, supersedesId: 'f2' }),
    ]);
    await apply(events);
    const summary = await support(await partitionOf('f1'));
    expect(summary?.text).not.toContain('Lisbon');
    expect(summary?.text).toContain('Porto');
    expect(summary?.derivedFrom.map((d) => d.recordId)).toEqual(['f1', 'f2b', 'f3']);
    expect(await summaries.holding(TENANT, ['f2'])).toEqual([]);
  });

  it('a deletion task rebuilds without the record even before the index dropped it, and nothing brings it back', async () => {
    const all = history([
      ...facts,
      deleteMemory(after(T0, DAY), { id: 'f2', jobId: 'job-1' }),
      write(after(T0, DAY + HOUR), { id: 'f4', visibility: 'team', content: 'Ada owns a cat.', contentHash: sha256Hex('Ada owns a cat.') }),
      tombstone(after(T0, DAY + 2 * HOUR), { id: 'f2', jobId: 'job-1' }),
    ]);
    expect(all.map((e) => e.type)).toEqual(['MemoryWritten', 'MemoryWritten', 'MemoryWritten', 'MemoryRevocationRequested', 'MemoryWritten', 'MemoryTombstoned']);
    const [written, revocation, later, tombstoned] = [all.slice(0, 3), all.slice(3, 4), all.slice(4, 5), all.slice(5)];
    await apply(written);
    const partition = await partitionOf('f2');
    // Only the projector has seen the deletion (tombstone set); the index still holds f2.
    await project(revocation);
    expect(await f.index.get(TENANT, 'f2')).not.toBeNull();

    const ack = await runTask('summary', ['f2']);
    expect(ack.evidence).toMatchObject({ target: 'summary', status: 'done', ref: 'holding=1;rebuilt=1;removed=0;remaining=0' });
    expect((await support(partition))?.text).not.toContain('Lisbon');
    expect(await summaries.holding(TENANT, ['f2'])).toEqual([]);

    // A later write reaches the index-builder's rebuild while the index still has f2: the
    // tombstone keeps it out.
    await project(later);
    await indexEvent(f.index, later[0] as MemoryEvent);
    await summarizeEvent(deps(), later[0] as MemoryEvent);
    expect((await support(partition))?.text).not.toContain('Lisbon');

    // Then the index-builder folds the revocation and the tombstone: still never back.
    await project(tombstoned);
    await build([...revocation, ...tombstoned]);
    const summary = await support(partition);
    expect(summary?.text).toBe('Ada prefers email.\nAda owns a cat.\nAda works nights.');
    expect(summary?.derivedFrom.map((d) => d.recordId)).toEqual(['f1', 'f3', 'f4']);
    expect(await summaries.holding(TENANT, ['f2'])).toEqual([]);
  });

  it('a deletion task also leaves out a copy of the deleted content under another id', async () => {
    await apply(history(facts));
    const original = await f.index.get(TENANT, 'f2');
    if (!original) throw new Error('f2 was not indexed');
    await f.index.upsert([{ ...original, recordId: 'stray-copy' }]);
    await summarizeEvent(deps(), history(facts)[1] as MemoryEvent);
    expect((await support(original.partition))?.derivedFrom.map((d) => d.recordId)).toContain('stray-copy');

    const ack = await runTask('summary', ['f2']);
    expect(ack.evidence.status).toBe('done');
    const summary = await support(original.partition);
    expect(summary?.text).not.toContain('Lisbon');
    expect(summary?.derivedFrom.map((d) => d.recordId)).toEqual(['f1', 'f3']);

    // A later rebuild (another write of the subject) keeps the copy out as well: the record
    // hash says f2 is being deleted, and its content hash goes with it.
    await project(history([...facts, deleteMemory(after(T0, DAY), { id: 'f2', jobId: 'job-1' })]).slice(3));
    await apply(history([write(after(T0, DAY + HOUR), { id: 'f4', visibility: 'team', content: 'Ada owns a cat.', contentHash: sha256Hex('Ada owns a cat.') })]));
    const later = await support(original.partition);
    expect(later?.text).not.toContain('Lisbon');
    expect(later?.derivedFrom.map((d) => d.recordId)).toEqual(['f1', 'f3', 'f4']);
  });

  it('never summarises a quarantined record; its promotion brings it in', async () => {
    const quarantined = [write(T0, { id: 'q1', visibility: 'team', trust: 'untrusted', content: 'Ada owes money.', contentHash: sha256Hex('Ada owes money.') })];
    await apply(history(quarantined));
    expect(await summaries.count()).toBe(0);
    await apply(history([...quarantined, promote(after(T0, HOUR), { id: 'q1', expectedVersion: 1 })]).slice(1));
    expect((await support(await partitionOf('q1')))?.text).toBe('Ada owes money.');
  });

  it('forgetting the subject removes its summaries; the task then finds nothing to hold', async () => {
    const events = history([...facts, forget(after(T0, DAY), { jobId: 'job-1' })]);
    await apply(events);
    expect(await summaries.count()).toBe(0);
    const ack = await runTask('summary', ['f1', 'f2', 'f3']);
    expect(ack.evidence).toMatchObject({ status: 'done', ref: 'holding=0;rebuilt=0;removed=1;remaining=0' });
  });

  it('ignores deletion tasks of other targets', async () => {
    const task: DeletionTask = { jobId: 'job-1', tenantId: TENANT, target: 'keyword', recordIds: ['f1'], retainPrimary: false, issuedAt: T0 };
    const sent: OutgoingMessage[] = [];
    await summaryTargetHandler(deps(), f.clock)(
      { topic: TOPICS.deletionTasks, partition: 0, offset: 0, key: 'job-1', value: task, headers: {}, timestamp: 0 },
      context(sent),
    );
    expect(sent).toEqual([]);
  });
});
