import { createHash } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { IndexDocument, SearchHit, SearchIndex, SearchQuery } from '@gm/search-index';

/**
 * What an adapter under test hands the suite. Every test calls the factory once (or twice),
 * so each gets its own empty index.
 */
export interface SearchIndexHarness {
  index: SearchIndex;
  /** Closes every instance handed out (including reopened ones) and deletes the storage. */
  cleanup: () => Promise<void>;
  /**
   * A new instance over the same storage; the suite closes `index` before calling it.
   * Optional only so throwaway fakes type-check: without it the durability test fails.
   */
  reopen?: () => Promise<SearchIndex>;
}

export type SearchIndexFactory = () => Promise<SearchIndexHarness>;

const NOW = '2030-01-01T00:00:00.000Z';
const NEXT_YEAR = '2031-01-01T00:00:00.000Z';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function doc(recordId: string, content: string, overrides: Partial<IndexDocument> = {}): IndexDocument {
  return {
    tenantId: 'tenant-1',
    recordId,
    partition: 'part-a',
    subjectId: 'subject-1',
    kind: 'fact',
    purposes: ['support'],
    content,
    contentHash: sha256(content),
    confidence: 0.8,
    createdAt: '2029-12-01T00:00:00.000Z',
    expiresAt: NEXT_YEAR,
    version: 1,
    provenance: [{ source: 'user', observedAt: '2029-12-01T00:00:00.000Z' }],
    ...overrides,
  };
}

function query(text: string, overrides: Partial<SearchQuery> = {}): SearchQuery {
  return { tenantId: 'tenant-1', partitions: ['part-a'], purpose: 'support', text, now: NOW, limit: 10, ...overrides };
}

const ids = (hits: SearchHit[]) => hits.map((h) => h.doc.recordId);

/**
 * Runs the shared search-index semantics against one adapter. Only the port's documented
 * behaviour is asserted; the test vocabulary avoids English stop words and relies on neither
 * stemming nor its absence, so analyzers may differ in those respects.
 */
export function testSearchIndex(adapterName: string, factory: SearchIndexFactory): void {
  describe(`SearchIndex contract: ${adapterName}`, () => {
    async function open(): Promise<SearchIndexHarness> {
      const harness = await factory();
      onTestFinished(() => harness.cleanup());
      return harness;
    }

    /** Every search must honour the invariants of the port, whatever else a test checks. */
    async function search(index: SearchIndex, q: SearchQuery): Promise<SearchHit[]> {
      const hits = await index.search(q);
      expect(hits.length).toBeLessThanOrEqual(q.limit);
      hits.forEach((hit, i) => {
        expect(hit.lexicalScore).toBeGreaterThan(0);
        const previous = hits[i - 1];
        if (previous !== undefined) expect(hit.lexicalScore).toBeLessThanOrEqual(previous.lexicalScore);
      });
      return hits;
    }

    it('returns an upserted document unchanged from get, and null for an unknown id', async () => {
      const { index } = await open();
      const written = doc('rec-1', 'The customer prefers email', {
        purposes: ['support', 'billing'],
        expiresAt: '2030-03-01T12:00:00+02:00',
        provenance: [{ source: 'tool', uri: 'https://example.test/t/1', observedAt: '2029-12-01T00:00:00.000Z' }],
      });
      await index.upsert([written]);
      expect(await index.get('tenant-1', 'rec-1')).toEqual(written);
      expect(await index.get('tenant-1', 'rec-unknown')).toBeNull();
    });

    it('pages one (partition, subject)’s summary sources for a purpose best first: confidence, then newer, then id; other purposes, kinds, expired and other scopes left out', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-low', 'low confidence', { confidence: 0.2 }),
        doc('rec-old', 'older of two', { confidence: 0.9, createdAt: '2029-11-01T00:00:00.000Z' }),
        // An offset time that is the newer instant of the two, though it sorts lower as text.
        doc('rec-new', 'newer of two', { confidence: 0.9, createdAt: '2029-11-02T01:00:00.000+02:00' }),
        doc('rec-tie-b', 'tie b'),
        doc('rec-tie-a', 'tie a'),
        // 0.7 and the number just below it: the same 32-bit float, so the id orders them.
        doc('rec-f32-b', 'float b', { confidence: 0.7 }),
        doc('rec-f32-a', 'float a', { confidence: 0.6999999999999999 }),
        doc('rec-other-purpose', 'billing only', { purposes: ['billing'], confidence: 1 }),
        doc('rec-note', 'a working note', { kind: 'working_note', confidence: 1 }),
        doc('rec-expired', 'expired', { expiresAt: '2029-06-01T00:00:00.000Z', confidence: 1 }),
        doc('rec-other-subject', 'other subject', { subjectId: 'subject-2', confidence: 1 }),
        doc('rec-other-partition', 'other partition', { partition: 'part-b', confidence: 1 }),
        doc('rec-other-tenant', 'other tenant', { tenantId: 'tenant-2', confidence: 1 }),
      ]);
      const query = { tenantId: 'tenant-1', partition: 'part-a', subjectId: 'subject-1', purpose: 'support', kinds: ['fact'] as const, now: NOW };
      const pages: string[][] = [];
      let after: string | undefined;
      for (;;) {
        const page = await index.subjectDocumentsRanked({ ...query, limit: 3, ...(after === undefined ? {} : { after }) });
        pages.push(page.documents.map((d) => d.recordId));
        if (page.next === undefined) break;
        after = page.next;
      }
      expect(pages).toEqual([['rec-new', 'rec-old', 'rec-tie-a'], ['rec-tie-b', 'rec-f32-a', 'rec-f32-b'], ['rec-low']]);
      const first = await index.subjectDocumentsRanked({ ...query, limit: 1 });
      expect(first.documents).toEqual([doc('rec-new', 'newer of two', { confidence: 0.9, createdAt: '2029-11-02T01:00:00.000+02:00' })]);
      expect(first.next).toBeDefined();
      // A page that is not full has no next; an empty kinds list matches nothing.
      expect((await index.subjectDocumentsRanked({ ...query, purpose: 'billing', limit: 3 }))).toEqual({ documents: [doc('rec-other-purpose', 'billing only', { purposes: ['billing'], confidence: 1 })] });
      expect(await index.subjectDocumentsRanked({ ...query, kinds: [], limit: 3 })).toEqual({ documents: [] });
      await expect(index.subjectDocumentsRanked({ ...query, limit: 3, after: 'not a cursor' })).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
      // The purposes a rebuild must build: of the same sources.
      expect(await index.subjectPurposes(query)).toEqual(['billing', 'support']);
      expect(await index.subjectPurposes({ ...query, kinds: ['working_note'] })).toEqual(['support']);
      expect(await index.subjectPurposes({ ...query, subjectId: 'subject-3' })).toEqual([]);
    });

    it('treats a repeated upsert of the same document as one document', async () => {
      const { index } = await open();
      const d = doc('rec-1', 'kafka keeps the event log');
      await index.upsert([d]);
      await index.upsert([d]);
      expect(await index.count()).toBe(1);
      expect(ids(await search(index, query('kafka')))).toEqual(['rec-1']);
    });

    it('returns documents matching any query term and ignores those matching none', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-kafka', 'kafka keeps the event log'),
        doc('rec-redis', 'redis holds the tombstones'),
        doc('rec-garden', 'tomatoes need sunlight'),
      ]);
      const hits = await search(index, query('Kafka tombstones'));
      expect(ids(hits).sort()).toEqual(['rec-kafka', 'rec-redis']);
      expect(hits.map((h) => h.doc)).toContainEqual(doc('rec-kafka', 'kafka keeps the event log'));
    });

    it('ranks a document matching more query terms above one matching fewer', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-one', 'alpha zulu yankee xray'),
        doc('rec-two', 'alpha bravo yankee xray'),
        doc('rec-three', 'alpha bravo charlie xray'),
        doc('rec-none', 'whiskey zulu yankee xray'),
      ]);
      const hits = await search(index, query('alpha bravo charlie'));
      expect(ids(hits)).toEqual(['rec-three', 'rec-two', 'rec-one']);
    });

    it('caps hits at the limit and keeps the best ones', async () => {
      const { index } = await open();
      const terms = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
      const fillers = ['zulu', 'yankee', 'xray', 'whiskey', 'victor'];
      await index.upsert(
        [1, 2, 3, 4, 5].map((k) => doc(`rec-${k}`, [...terms.slice(0, k), ...fillers.slice(k)].join(' '))),
      );
      const hits = await search(index, query(terms.join(' '), { limit: 2 }));
      expect(ids(hits)).toEqual(['rec-5', 'rec-4']);
    });

    it('returns nothing for an empty partition list', async () => {
      const { index } = await open();
      await index.upsert([doc('rec-1', 'kafka keeps the event log')]);
      expect(await search(index, query('kafka', { partitions: [] }))).toEqual([]);
    });

    it('never returns a document from an unauthorised partition, even a better match', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-allowed', 'alpha zulu yankee xray whiskey'),
        doc('rec-hidden', 'alpha bravo charlie', { partition: 'part-b' }),
      ]);
      expect(ids(await search(index, query('alpha bravo charlie')))).toEqual(['rec-allowed']);
      expect(ids(await search(index, query('alpha bravo charlie', { limit: 1 })))).toEqual(['rec-allowed']);
      // The hidden document is the only match: the answer is empty, not a hint of it.
      expect(await search(index, query('bravo charlie'))).toEqual([]);
      const both = await search(index, query('alpha', { partitions: ['part-a', 'part-b'] }));
      expect(ids(both).sort()).toEqual(['rec-allowed', 'rec-hidden']);
    });

    it('keeps tenants apart for search, get, remove and count', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-1', 'tenant one secret plan'),
        doc('rec-1', 'tenant two secret plan', { tenantId: 'tenant-2' }),
        doc('rec-2', 'another secret of tenant two', { tenantId: 'tenant-2' }),
      ]);
      expect(ids(await search(index, query('secret')))).toEqual(['rec-1']);
      expect((await search(index, query('secret')))[0]?.doc.tenantId).toBe('tenant-1');
      expect(await search(index, query('another'))).toEqual([]);
      expect((await index.get('tenant-2', 'rec-1'))?.content).toBe('tenant two secret plan');
      expect(await index.get('tenant-1', 'rec-2')).toBeNull();
      expect(await index.remove('tenant-1', ['rec-2'])).toBe(0);
      expect(await index.remove('tenant-2', ['rec-1'])).toBe(1);
      expect((await index.get('tenant-1', 'rec-1'))?.content).toBe('tenant one secret plan');
      expect(await index.count('tenant-1')).toBe(1);
      expect(await index.count('tenant-2')).toBe(1);
    });

    it('returns only documents whose purposes include the requested one', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-support', 'invoice overdue reminder', { purposes: ['support', 'billing'] }),
        doc('rec-billing', 'invoice overdue escalation', { purposes: ['billing'] }),
      ]);
      expect(ids(await search(index, query('invoice')))).toEqual(['rec-support']);
      const billing = await search(index, query('invoice', { purpose: 'billing' }));
      expect(ids(billing).sort()).toEqual(['rec-billing', 'rec-support']);
      expect(await search(index, query('invoice', { purpose: 'marketing' }))).toEqual([]);
    });

    it('hides documents whose expiry is at or before now, comparing instants not strings', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-at-now', 'expiry probe', { expiresAt: NOW }),
        doc('rec-at-now-offset', 'expiry probe', { expiresAt: '2030-01-01T01:00:00.000+01:00' }),
        doc('rec-just-after', 'expiry probe', { expiresAt: '2030-01-01T00:00:00.001Z' }),
        // As strings these sort the wrong way round; as instants the first is past, the second live.
        doc('rec-past-offset', 'expiry probe', { expiresAt: '2030-01-01T00:30:00.000+01:00' }),
        doc('rec-live-offset', 'expiry probe', { expiresAt: '2029-12-31T23:30:00.000-01:00' }),
      ]);
      const hits = await search(index, query('expiry probe'));
      expect(ids(hits).sort()).toEqual(['rec-just-after', 'rec-live-offset']);
      const earlier = await search(index, query('expiry probe', { now: '2029-12-31T23:59:59.999Z' }));
      expect(ids(earlier).sort()).toEqual(['rec-at-now', 'rec-at-now-offset', 'rec-just-after', 'rec-live-offset']);
    });

    it('narrows results by subject and by kinds when asked', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-fact', 'deploy window friday', { subjectId: 'subject-1', kind: 'fact' }),
        doc('rec-pref', 'deploy window monday', { subjectId: 'subject-1', kind: 'preference' }),
        doc('rec-other', 'deploy window sunday', { subjectId: 'subject-2', kind: 'fact' }),
      ]);
      expect(ids(await search(index, query('deploy', { subjectId: 'subject-2' })))).toEqual(['rec-other']);
      expect(ids(await search(index, query('deploy', { kinds: ['preference'] })))).toEqual(['rec-pref']);
      const both = await search(index, query('deploy', { subjectId: 'subject-1', kinds: ['fact', 'skill'] }));
      expect(ids(both)).toEqual(['rec-fact']);
      expect(ids(await search(index, query('deploy'))).sort()).toEqual(['rec-fact', 'rec-other', 'rec-pref']);
    });

    it('applies every filter before the limit, so better excluded matches cannot crowd out', async () => {
      const { index } = await open();
      const strong = 'alpha bravo charlie';
      await index.upsert([
        doc('rec-valid', 'alpha zulu yankee xray whiskey'),
        doc('rec-partition', strong, { partition: 'part-b' }),
        doc('rec-tenant', strong, { tenantId: 'tenant-2' }),
        doc('rec-purpose', strong, { purposes: ['marketing'] }),
        doc('rec-expired', strong, { expiresAt: '2029-06-01T00:00:00.000Z' }),
        doc('rec-subject', strong, { subjectId: 'subject-2' }),
        doc('rec-kind', strong, { kind: 'skill' }),
      ]);
      const hits = await search(index, query(strong, { subjectId: 'subject-1', kinds: ['fact'], limit: 1 }));
      expect(ids(hits)).toEqual(['rec-valid']);
    });

    it('lets a newer or equal version replace a document and never an older one', async () => {
      const { index } = await open();
      await index.upsert([doc('rec-1', 'version two apples', { version: 2 })]);
      await index.upsert([doc('rec-1', 'version one bananas', { version: 1 })]);
      expect(await index.get('tenant-1', 'rec-1')).toEqual(doc('rec-1', 'version two apples', { version: 2 }));
      expect(await search(index, query('bananas'))).toEqual([]);

      await index.upsert([doc('rec-1', 'version two cherries', { version: 2 })]);
      expect((await index.get('tenant-1', 'rec-1'))?.content).toBe('version two cherries');
      expect(await search(index, query('apples'))).toEqual([]);
      expect(ids(await search(index, query('cherries')))).toEqual(['rec-1']);

      // Within one batch the guard applies too: the later, older entry loses.
      await index.upsert([doc('rec-1', 'version four dates', { version: 4 }), doc('rec-1', 'version three figs', { version: 3 })]);
      expect((await index.get('tenant-1', 'rec-1'))?.version).toBe(4);
      expect(await index.count()).toBe(1);
    });

    it('removes by id, reports how many it removed, and is idempotent', async () => {
      const { index } = await open();
      await index.upsert([doc('rec-1', 'removal probe'), doc('rec-2', 'removal probe'), doc('rec-3', 'removal probe')]);
      expect(await index.remove('tenant-1', ['rec-1', 'rec-2', 'rec-missing'])).toBe(2);
      expect(await index.remove('tenant-1', ['rec-1', 'rec-2'])).toBe(0);
      expect(await index.remove('tenant-1', [])).toBe(0);
      expect(await index.get('tenant-1', 'rec-1')).toBeNull();
      expect(ids(await search(index, query('removal')))).toEqual(['rec-3']);
      expect(await index.count()).toBe(1);
    });

    it('erases what it removed and says what is physically true of it, keeping the rest searchable (design §8.4)', async () => {
      const { index } = await open();
      await index.upsert([doc('rec-1', 'erasure probe'), doc('rec-2', 'erasure probe')]);
      expect(await index.remove('tenant-1', ['rec-1'])).toBe(1);
      // SQLite (secure_delete, WAL truncated): erased; Elasticsearch: erased once expunged, else waiting for a merge.
      expect(['erased', 'pending_compaction']).toContain(await index.eraseDeleted());
      expect(ids(await search(index, query('erasure')))).toEqual(['rec-2']);
      expect(await index.get('tenant-1', 'rec-1')).toBeNull();
    });

    it('counts every document, or one tenant’s, expired ones included', async () => {
      const { index } = await open();
      expect(await index.count()).toBe(0);
      await index.upsert([
        doc('rec-1', 'count probe'),
        doc('rec-2', 'count probe', { expiresAt: '2020-01-01T00:00:00.000Z' }),
        doc('rec-1', 'count probe', { tenantId: 'tenant-2' }),
      ]);
      expect(await index.count()).toBe(3);
      expect(await index.count('tenant-1')).toBe(2);
      expect(await index.count('tenant-2')).toBe(1);
      expect(await index.count('tenant-unknown')).toBe(0);
    });

    it('digests identical contents identically, whatever the insertion order, and notices changes', async () => {
      const { index } = await open();
      const empty = await index.digest();
      expect(empty).toMatch(/^[0-9a-f]{64}$/);
      const docs = [
        doc('rec-1', 'digest one'),
        doc('rec-2', 'digest two', { partition: 'part-b', version: 3 }),
        doc('rec-1', 'digest other tenant', { tenantId: 'tenant-2' }),
      ];
      await index.upsert(docs);
      const first = await index.digest();
      expect(first).not.toBe(empty);

      await index.clear();
      expect(await index.digest()).toBe(empty);
      await index.upsert([...docs].reverse());
      expect(await index.digest()).toBe(first);

      await index.upsert([doc('rec-1', 'digest one', { version: 2 })]);
      const bumped = await index.digest();
      expect(bumped).not.toBe(first);
      await index.upsert([doc('rec-1', 'digest one', { version: 2, partition: 'part-c' })]);
      const moved = await index.digest();
      expect(moved).not.toBe(bumped);
      await index.upsert([doc('rec-1', 'digest one', { version: 2, partition: 'part-c', contentHash: sha256('x') })]);
      expect(await index.digest()).not.toBe(moved);
    });

    it('clear drops every document of every tenant', async () => {
      const { index } = await open();
      await index.upsert([doc('rec-1', 'clear probe'), doc('rec-2', 'clear probe', { tenantId: 'tenant-2' })]);
      await index.clear();
      expect(await index.count()).toBe(0);
      expect(await index.get('tenant-1', 'rec-1')).toBeNull();
      expect(await search(index, query('clear'))).toEqual([]);
      await index.upsert([doc('rec-1', 'clear probe')]);
      expect(ids(await search(index, query('clear')))).toEqual(['rec-1']);
    });

    it('treats query text as plain words: no syntax injection, no crash', async () => {
      const { index } = await open();
      await index.upsert([
        doc('rec-alpha', 'alpha release notes'),
        doc('rec-near', 'meet near the station'),
        doc('rec-zurich', 'office in Zürich'),
      ]);
      const hostile = [
        '"alpha', 'alpha"', '(alpha', 'alpha)', 'alpha*', '-alpha', 'content:alpha', '{content}: alpha', '^alpha',
        'alpha AND', 'NOT alpha', 'NEAR(alpha unknownterm)', 'alpha + "', "alpha' OR 1=1 --", 'alpha; DROP TABLE x',
      ];
      for (const text of hostile) {
        expect(ids(await search(index, query(text))), text).toContain('rec-alpha');
      }
      expect(ids(await search(index, query('NEAR')))).toEqual(['rec-near']);
      expect(ids(await search(index, query('zürich!!!')))).toEqual(['rec-zurich']);
      for (const text of ['"()*:-^', '', '   ', '"', '***', '()']) {
        expect(await search(index, query(text)), JSON.stringify(text)).toEqual([]);
      }
    });

    it('survives close and reopen', async () => {
      const harness = await open();
      // Fails loudly rather than passing silently: durability is part of the contract.
      if (harness.reopen === undefined) throw new Error(`${adapterName}: the harness must provide reopen()`);
      const d = doc('rec-1', 'durable memory about kafka');
      await harness.index.upsert([d, doc('rec-2', 'second durable note')]);
      await harness.index.remove('tenant-1', ['rec-2']);
      const digest = await harness.index.digest();
      await harness.index.close();

      const reopened = await harness.reopen();
      expect(await reopened.get('tenant-1', 'rec-1')).toEqual(d);
      expect(await reopened.count()).toBe(1);
      expect(await reopened.digest()).toBe(digest);
      expect(ids(await search(reopened, query('kafka')))).toEqual(['rec-1']);
      expect(await search(reopened, query('second'))).toEqual([]);
    });
  });
}
