import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testSearchIndex } from '@gm/testing/contracts/search-index';
import type { SearchIndexHarness } from '@gm/testing/contracts/search-index';
import type { IndexDocument, SearchIndex, SearchQuery } from '../port.ts';
import { createSqliteSearchIndex } from './sqlite-search-index.ts';

async function harness(): Promise<SearchIndexHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-search-index-'));
  const file = join(dir, 'search-index.db');
  const opened: SearchIndex[] = [];
  const open = (): SearchIndex => {
    const index = createSqliteSearchIndex({ file });
    opened.push(index);
    return index;
  };
  return {
    index: open(),
    reopen: async () => open(),
    cleanup: async () => {
      for (const index of opened) await index.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

testSearchIndex('sqlite', harness);

// Choices the port leaves open; pinned here so they do not drift silently.
describe('sqlite search index, adapter choices', () => {
  const doc: IndexDocument = {
    tenantId: 'tenant-1', recordId: 'rec-1', partition: 'part-a', subjectId: 'subject-1', kind: 'fact',
    purposes: ['support'], content: 'The customer prefers email', contentHash: 'a'.repeat(64), confidence: 0.5,
    createdAt: '2029-01-01T00:00:00.000Z', expiresAt: '2031-01-01T00:00:00.000Z', version: 1,
    provenance: [{ source: 'user', observedAt: '2029-01-01T00:00:00.000Z' }],
  };
  const query: Omit<SearchQuery, 'text'> = { tenantId: 'tenant-1', partitions: ['part-a'], purpose: 'support', now: '2030-01-01T00:00:00.000Z', limit: 5 };

  it('stems English words and folds diacritics, so other word forms still match', async () => {
    const { index, cleanup } = await harness();
    onTestFinished(cleanup);
    await index.upsert([doc]);
    expect(await index.search({ ...query, text: 'preferred customers' })).toHaveLength(1);
    expect(await index.search({ ...query, text: 'émail' })).toHaveLength(1);
  });

  it('reads an explicit empty kinds list as "no kind allowed"', async () => {
    const { index, cleanup } = await harness();
    onTestFinished(cleanup);
    await index.upsert([doc]);
    expect(await index.search({ ...query, text: 'email', kinds: [] })).toEqual([]);
  });

  it('rejects a document whose expiry is not a time, writing nothing of its batch', async () => {
    const { index, cleanup } = await harness();
    onTestFinished(cleanup);
    const bad = { ...doc, recordId: 'rec-2', expiresAt: 'soon' };
    await expect(index.upsert([doc, bad])).rejects.toMatchObject({ code: 'MEM_VALIDATION' });
    expect(await index.count()).toBe(0);
  });
});
