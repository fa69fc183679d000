import { describe, expect, it, onTestFinished } from 'vitest';
import type { Summary, SummaryHit, SummaryQuery, SummaryStore } from '@gm/search-index';

/** What an adapter under test hands the suite; every test gets its own empty store. */
export interface SummaryStoreHarness {
  store: SummaryStore;
  /** Closes every instance handed out (including reopened ones) and deletes the storage. */
  cleanup: () => Promise<void>;
  /** A new instance over the same storage; the suite closes `store` before calling it. */
  reopen: () => Promise<SummaryStore>;
}

export type SummaryStoreFactory = () => Promise<SummaryStoreHarness>;

const NOW = '2030-01-01T00:00:00.000Z';

function summary(overrides: Partial<Summary> = {}): Summary {
  return {
    tenantId: 'tenant-1',
    partition: 'part-a',
    subjectId: 'subject-1',
    purpose: 'support',
    text: 'kafka keeps the event log\nredis holds the tombstones',
    derivedFrom: [
      { recordId: 'rec-1', version: 1, contentHash: 'a'.repeat(64) },
      { recordId: 'rec-2', version: 3, contentHash: 'b'.repeat(64) },
    ],
    expiresAt: '2031-01-01T00:00:00.000Z',
    updatedAt: '2029-12-01T00:00:00.000Z',
    ...overrides,
  };
}

const scope = (s: Summary) => [s.tenantId, s.partition, s.subjectId] as const;

function query(overrides: Partial<SummaryQuery> = {}): SummaryQuery {
  return { tenantId: 'tenant-1', partitions: ['part-a'], purpose: 'support', now: NOW, limit: 10, ...overrides };
}

const keysOf = (hits: SummaryHit[]) => hits.map((h) => `${h.summary.partition}/${h.summary.subjectId}/${h.summary.purpose}`);

/**
 * The shared semantics of the summary store (§6.8). The vocabulary avoids stop words and
 * does not depend on stemming, so analyzers may differ there.
 */
export function testSummaryStore(adapterName: string, factory: SummaryStoreFactory): void {
  describe(`SummaryStore contract: ${adapterName}`, () => {
    async function open(): Promise<SummaryStoreHarness> {
      const harness = await factory();
      onTestFinished(() => harness.cleanup());
      return harness;
    }

    it('returns replaced summaries unchanged from get, ordered by purpose', async () => {
      const { store } = await open();
      const support = summary();
      const billing = summary({ purpose: 'billing', text: 'invoices go monthly', derivedFrom: [{ recordId: 'rec-3', version: 1, contentHash: 'c'.repeat(64) }] });
      await store.replace(...scope(support), [support, billing]);
      expect(await store.get(...scope(support))).toEqual([billing, support]);
      expect(await store.get('tenant-1', 'part-a', 'subject-unknown')).toEqual([]);
    });

    it('replace makes the scope exactly the given summaries: other purposes go, an empty list removes all', async () => {
      const { store } = await open();
      const support = summary();
      const billing = summary({ purpose: 'billing' });
      await store.replace(...scope(support), [support, billing]);
      const rewritten = summary({ text: 'kafka keeps the event log', derivedFrom: [{ recordId: 'rec-1', version: 1, contentHash: 'a'.repeat(64) }] });
      await store.replace(...scope(support), [rewritten]);
      expect(await store.get(...scope(support))).toEqual([rewritten]);
      expect(await store.holding('tenant-1', ['rec-2'])).toEqual([]);
      await store.replace(...scope(support), []);
      expect(await store.get(...scope(support))).toEqual([]);
      expect(await store.count()).toBe(0);
    });

    it('is idempotent: the same replace twice is one summary', async () => {
      const { store } = await open();
      const s = summary();
      await store.replace(...scope(s), [s]);
      await store.replace(...scope(s), [s]);
      expect(await store.count()).toBe(1);
    });

    it('rejects a summary outside the scope being replaced, writing nothing', async () => {
      const { store } = await open();
      await expect(store.replace('tenant-1', 'part-a', 'subject-1', [summary(), summary({ purpose: 'billing', partition: 'part-b' })]))
        .rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      await expect(store.replace('tenant-1', 'part-a', 'subject-1', [summary(), summary()])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      expect(await store.count()).toBe(0);
    });

    it('replaceMany replaces each scope as replace would, and leaves scopes it does not name alone', async () => {
      const { store } = await open();
      const a = summary();
      const aBilling = summary({ purpose: 'billing' });
      const b = summary({ subjectId: 'subject-2', derivedFrom: [{ recordId: 'rec-5', version: 1, contentHash: 'e'.repeat(64) }] });
      const untouched = summary({ subjectId: 'subject-3', derivedFrom: [{ recordId: 'rec-6', version: 1, contentHash: 'f'.repeat(64) }] });
      // Same subject, another partition: a scope of its own.
      const otherPartition = summary({ partition: 'part-b', derivedFrom: [{ recordId: 'rec-7', version: 1, contentHash: '7'.repeat(64) }] });
      await store.replace(...scope(a), [a, aBilling]);
      await store.replace(...scope(untouched), [untouched]);
      await store.replace(...scope(otherPartition), [otherPartition]);
      const rewritten = summary({ text: 'kafka keeps the event log', derivedFrom: [{ recordId: 'rec-1', version: 2, contentHash: 'a'.repeat(64) }] });
      await store.replaceMany('tenant-1', [
        { partition: 'part-a', subjectId: 'subject-1', summaries: [rewritten] },
        { partition: 'part-a', subjectId: 'subject-2', summaries: [b] },
      ]);
      expect(await store.get(...scope(a))).toEqual([rewritten]);
      expect(await store.get(...scope(b))).toEqual([b]);
      expect(await store.get(...scope(untouched))).toEqual([untouched]);
      expect(await store.get(...scope(otherPartition))).toEqual([otherPartition]);
      expect(await store.holding('tenant-1', ['rec-2'])).toEqual([]);
      await store.replaceMany('tenant-1', [
        { partition: 'part-a', subjectId: 'subject-1', summaries: [] },
        { partition: 'part-a', subjectId: 'subject-2', summaries: [] },
      ]);
      expect(await store.count()).toBe(2);
    });

    it('replaceMany with one invalid scope, or one scope twice, writes nothing', async () => {
      const { store } = await open();
      const good = summary();
      await expect(store.replaceMany('tenant-1', [
        { partition: 'part-a', subjectId: 'subject-1', summaries: [good] },
        { partition: 'part-a', subjectId: 'subject-2', summaries: [summary({ subjectId: 'subject-9' })] },
      ])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      await expect(store.replaceMany('tenant-1', [
        { partition: 'part-a', subjectId: 'subject-1', summaries: [good] },
        { partition: 'part-a', subjectId: 'subject-1', summaries: [] },
      ])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      expect(await store.count()).toBe(0);
    });

    it('lists which summaries hold given records, each once, nothing of other tenants', async () => {
      const { store } = await open();
      const a = summary();
      const b = summary({ subjectId: 'subject-2', derivedFrom: [{ recordId: 'rec-2', version: 1, contentHash: 'b'.repeat(64) }] });
      const other = summary({ tenantId: 'tenant-2' });
      await store.replace(...scope(a), [a, summary({ purpose: 'billing' })]);
      await store.replace(...scope(b), [b]);
      await store.replace(...scope(other), [other]);
      expect(await store.holding('tenant-1', ['rec-1', 'rec-2'])).toEqual([
        { tenantId: 'tenant-1', partition: 'part-a', subjectId: 'subject-1', purpose: 'billing' },
        { tenantId: 'tenant-1', partition: 'part-a', subjectId: 'subject-1', purpose: 'support' },
        { tenantId: 'tenant-1', partition: 'part-a', subjectId: 'subject-2', purpose: 'support' },
      ]);
      expect(await store.holding('tenant-1', ['rec-unknown'])).toEqual([]);
      expect(await store.holding('tenant-1', [])).toEqual([]);
    });

    it('remove drops every purpose of one (partition, subject), reports how many, and is idempotent', async () => {
      const { store } = await open();
      const s = summary();
      await store.replace(...scope(s), [s, summary({ purpose: 'billing' })]);
      expect(await store.remove(...scope(s))).toBe(2);
      expect(await store.remove(...scope(s))).toBe(0);
      expect(await store.holding('tenant-1', ['rec-1'])).toEqual([]);
    });

    it('indexes, finds and removes summaries whose tenant, partition, subject and purpose are as long as their grammar allows', async () => {
      const { store } = await open();
      // Id grammar (contracts primitives.ts): tenant ≤ 64, ids ≤ 128 of [A-Za-z0-9._:@-], purposes ≤ 64;
      // the partition is a private one (design §4) of a maximal resource id and owner.
      const tenantId = `t${'n'.repeat(63)}`;
      const id = (tail: string) => `${'s:@.-_'.repeat(21)}${tail}`.slice(-128);
      const partition = `t:${tenantId}/r:workspace:${id('r')}/v:private/o:${id('o')}`;
      const purpose = `p${'u'.repeat(63)}`;
      const one = summary({ tenantId, partition, subjectId: id('1'), purpose, derivedFrom: [{ recordId: id('rec'), version: 1, contentHash: 'a'.repeat(64) }] });
      // Differs from `one` in the subject's last character only: a scope of its own.
      const two = summary({ ...one, subjectId: id('2'), text: 'zookeeper elected a leader' });
      await store.replace(...scope(one), [one]);
      await store.replace(...scope(one), [one]);
      await store.replace(...scope(two), [two]);
      expect(await store.count(tenantId)).toBe(2);
      expect(await store.get(...scope(one))).toEqual([one]);
      expect(keysOf(await store.search(query({ tenantId, partitions: [partition], purpose, text: 'kafka event log' })))).toEqual([`${partition}/${one.subjectId}/${purpose}`]);
      expect(await store.holding(tenantId, [id('rec')])).toEqual([one, two].map((s) => ({ tenantId, partition, subjectId: s.subjectId, purpose })));
      // What the summary deletion target of a forget does: the subject's summaries go, the other subject's stay.
      expect(await store.remove(...scope(one))).toBe(1);
      expect(await store.get(...scope(one))).toEqual([]);
      expect(await store.get(...scope(two))).toEqual([two]);
      await store.replace(...scope(two), []);
      expect(await store.count(tenantId)).toBe(0);
    });

    it('searches only the given partitions, purpose and tenant; an empty partition list reads nothing', async () => {
      const { store } = await open();
      const inScope = summary();
      const otherPartition = summary({ partition: 'part-b', text: 'kafka kafka kafka event log' });
      const otherTenant = summary({ tenantId: 'tenant-2' });
      await store.replace(...scope(inScope), [inScope, summary({ purpose: 'billing' })]);
      await store.replace(...scope(otherPartition), [otherPartition]);
      await store.replace(...scope(otherTenant), [otherTenant]);
      expect(keysOf(await store.search(query({ text: 'kafka' })))).toEqual(['part-a/subject-1/support']);
      expect(keysOf(await store.search(query({ text: 'kafka', partitions: ['part-a', 'part-b'] }))).sort())
        .toEqual(['part-a/subject-1/support', 'part-b/subject-1/support']);
      expect(await store.search(query({ text: 'kafka', partitions: [] }))).toEqual([]);
      expect(await store.search(query({ partitions: [] }))).toEqual([]);
      expect(await store.search(query({ text: 'kafka', purpose: 'planning' }))).toEqual([]);
    });

    it('ranks text matches by BM25 (> 0) and ignores summaries matching no term', async () => {
      const { store } = await open();
      const both = summary({ subjectId: 'subject-1', text: 'kafka keeps tombstones' });
      const one = summary({ subjectId: 'subject-2', text: 'kafka alone here' });
      const none = summary({ subjectId: 'subject-3', text: 'tomatoes need sunlight' });
      for (const s of [both, one, none]) await store.replace(...scope(s), [s]);
      const hits = await store.search(query({ text: 'kafka tombstones' }));
      expect(hits.map((h) => h.summary.subjectId)).toEqual(['subject-1', 'subject-2']);
      for (const h of hits) expect(h.lexicalScore).toBeGreaterThan(0);
      expect(await store.search(query({ text: '!!!' }))).toEqual([]);
    });

    it('without text lists the scope newest first, narrowed by subject, with score 0', async () => {
      const { store } = await open();
      const older = summary({ subjectId: 'subject-1', updatedAt: '2029-01-01T00:00:00.000Z' });
      const newer = summary({ subjectId: 'subject-2', updatedAt: '2029-06-01T00:00:00.000Z' });
      for (const s of [older, newer]) await store.replace(...scope(s), [s]);
      const hits = await store.search(query());
      expect(hits.map((h) => h.summary)).toEqual([newer, older]);
      expect(hits.every((h) => h.lexicalScore === 0)).toBe(true);
      expect((await store.search(query({ subjectId: 'subject-1' }))).map((h) => h.summary)).toEqual([older]);
      expect(await store.search(query({ limit: 1 }))).toHaveLength(1);
      expect(await store.search(query({ limit: 0 }))).toEqual([]);
    });

    it('hides a summary from search once its earliest source expired, comparing instants', async () => {
      const { store } = await open();
      const s = summary({ expiresAt: '2030-01-01T01:00:00+02:00' }); // 23:00Z the day before NOW
      await store.replace(...scope(s), [s]);
      expect(await store.search(query({ text: 'kafka' }))).toEqual([]);
      expect(await store.search(query({ text: 'kafka', now: '2029-12-31T22:59:59.000Z' }))).toHaveLength(1);
      expect(await store.get(...scope(s))).toEqual([s]);
    });

    it('counts, digests independently of order and updatedAt, and clears', async () => {
      const first = await open();
      const second = await open();
      const a = summary();
      const b = summary({ subjectId: 'subject-2', tenantId: 'tenant-2' });
      await first.store.replace(...scope(a), [a]);
      await first.store.replace(...scope(b), [b]);
      await second.store.replace(...scope(b), [{ ...b, updatedAt: '2029-12-24T00:00:00.000Z' }]);
      await second.store.replace(...scope(a), [a]);
      expect(await first.store.count()).toBe(2);
      expect(await first.store.count('tenant-2')).toBe(1);
      expect(await first.store.digest()).toBe(await second.store.digest());
      await second.store.replace(...scope(a), [{ ...a, text: 'changed' }]);
      expect(await first.store.digest()).not.toBe(await second.store.digest());
      await first.store.clear();
      expect(await first.store.count()).toBe(0);
      expect(await first.store.holding('tenant-1', ['rec-1'])).toEqual([]);
    });

    it('survives close and reopen', async () => {
      const harness = await open();
      const s = summary();
      await harness.store.replace(...scope(s), [s]);
      await harness.store.close();
      const reopened = await harness.reopen();
      expect(await reopened.get(...scope(s))).toEqual([s]);
      expect(await reopened.holding('tenant-1', ['rec-2'])).toHaveLength(1);
    });
  });
}
