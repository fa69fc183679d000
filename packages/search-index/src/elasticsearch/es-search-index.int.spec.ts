import { randomUUID } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { describe, expect, it, onTestFinished } from 'vitest';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testSearchIndex } from '@gm/testing/contracts/search-index';
import type { SearchIndexHarness } from '@gm/testing/contracts/search-index';
import { engineEndpoint } from '@gm/testing/engines';
import type { IndexDocument, SearchIndex, SearchQuery } from '../port.ts';
import { createElasticsearchSearchIndex, esIndexNames } from './es-search-index.ts';

/** Every test gets its own index (unique prefix) and deletes it afterwards. */
async function harness(): Promise<SearchIndexHarness> {
  const node = engineEndpoint('elasticsearch');
  const indexPrefix = `gm-test-${randomUUID()}`;
  const opened: SearchIndex[] = [];
  const open = (): SearchIndex => {
    const index = createElasticsearchSearchIndex({ node, indexPrefix });
    opened.push(index);
    return index;
  };
  return {
    index: open(),
    reopen: async () => open(),
    cleanup: async () => {
      for (const index of opened) await index.close();
      const admin = new Client({ node });
      try {
        await admin.indices.delete({ index: esIndexNames(indexPrefix).concrete, ignore_unavailable: true });
      } finally {
        await admin.close();
      }
    },
  };
}

testSearchIndex('elasticsearch', harness);

// Choices the port leaves open; pinned here (as for SQLite) so the runtimes do not drift apart.
describe('elasticsearch search index, adapter choices', () => {
  const doc: IndexDocument = {
    tenantId: 'tenant-1', recordId: 'rec-1', partition: 'part-a', subjectId: 'subject-1', kind: 'fact',
    purposes: ['support'], content: 'The customer prefers email', contentHash: 'a'.repeat(64), confidence: 0.5,
    createdAt: '2029-01-01T00:00:00.000Z', expiresAt: '2031-01-01T00:00:00.000Z', version: 1,
    provenance: [{ source: 'user', observedAt: '2029-01-01T00:00:00.000Z' }],
  };
  const query: Omit<SearchQuery, 'text'> = { tenantId: 'tenant-1', partitions: ['part-a'], purpose: 'support', now: '2030-01-01T00:00:00.000Z', limit: 5 };

  async function open(): Promise<SearchIndex> {
    const h = await harness();
    onTestFinished(h.cleanup);
    return h.index;
  }

  it('stems English words and folds diacritics, like the SQLite analyzer', async () => {
    const index = await open();
    await index.upsert([doc]);
    expect(await index.search({ ...query, text: 'preferred customers' })).toHaveLength(1);
    expect(await index.search({ ...query, text: 'émail' })).toHaveLength(1);
  });

  it('reads an explicit empty kinds list as "no kind allowed"', async () => {
    const index = await open();
    await index.upsert([doc]);
    expect(await index.search({ ...query, text: 'email', kinds: [] })).toEqual([]);
  });

  it('rejects a document whose expiry is not a time, writing nothing of its batch', async () => {
    const index = await open();
    const bad = { ...doc, recordId: 'rec-2', expiresAt: 'soon' };
    await expect(index.upsert([doc, bad])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    expect(await index.count()).toBe(0);
  });

  it('keeps ids apart even when a tenant or record id contains the separator', async () => {
    const index = await open();
    await index.upsert([
      { ...doc, tenantId: 'a/b', recordId: 'c', content: 'first' },
      { ...doc, tenantId: 'a', recordId: 'b/c', content: 'second' },
    ]);
    expect((await index.get('a/b', 'c'))?.content).toBe('first');
    expect((await index.get('a', 'b/c'))?.content).toBe('second');
    expect(await index.count()).toBe(2);
  });

  it('recreates its index when it was dropped underneath it, instead of auto-creating an unmapped one', async () => {
    const node = engineEndpoint('elasticsearch');
    const indexPrefix = `gm-test-${randomUUID()}`;
    const index = createElasticsearchSearchIndex({ node, indexPrefix });
    const admin = new Client({ node });
    onTestFinished(async () => {
      await index.close();
      await admin.indices.delete({ index: esIndexNames(indexPrefix).concrete, ignore_unavailable: true });
      await admin.close();
    });
    await index.upsert([doc]);
    await admin.indices.delete({ index: esIndexNames(indexPrefix).concrete });
    await index.upsert([doc]);
    expect(await index.search({ ...query, text: 'email' })).toHaveLength(1);
    const mapping = await admin.indices.getMapping({ index: esIndexNames(indexPrefix).alias });
    expect(Object.values(mapping)[0]?.mappings.properties?.partition).toEqual({ type: 'keyword' });
  });

  it('fails closed with a retriable MEM_UNAVAILABLE when Elasticsearch cannot be reached', async () => {
    // Port 9 (discard) on loopback: nothing listens there, so the connection is refused.
    const index = createElasticsearchSearchIndex({ node: 'http://127.0.0.1:9', indexPrefix: `gm-test-${randomUUID()}` });
    onTestFinished(() => index.close());
    await expect(index.search({ ...query, text: 'email' })).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    await expect(index.upsert([doc])).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
  });
});
