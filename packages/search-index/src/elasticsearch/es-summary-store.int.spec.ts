import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Client } from '@elastic/elasticsearch';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testSummaryStore } from '@gm/testing/contracts/summary-store';
import type { SummaryStoreHarness } from '@gm/testing/contracts/summary-store';
import { engineEndpoint } from '@gm/testing/engines';
import type { SummaryStore } from '../summary-port.ts';
import { createElasticsearchSummaryStore, esSummaryIndexNames } from './es-summary-store.ts';

/** Every test gets its own index (unique prefix) and deletes it afterwards; `refresh` as the store is opened with. */
const harness = (refresh?: 'wait_for') => async (): Promise<SummaryStoreHarness> => {
  const node = engineEndpoint('elasticsearch');
  const indexPrefix = `gm-test-${randomUUID()}`;
  const opened: SummaryStore[] = [];
  const open = (): SummaryStore => {
    const store = createElasticsearchSummaryStore({ node, indexPrefix, ...(refresh === undefined ? {} : { refresh }) });
    opened.push(store);
    return store;
  };
  return {
    store: open(),
    reopen: async () => open(),
    cleanup: async () => {
      for (const store of opened) await store.close();
      const admin = new Client({ node });
      try {
        await admin.indices.delete({ index: esSummaryIndexNames(indexPrefix).concrete, ignore_unavailable: true });
      } finally {
        await admin.close();
      }
    },
  };
};

testSummaryStore('elasticsearch', harness());
// The summary-builder's mode: writes visible at the next periodic refresh, held to the same contract.
testSummaryStore('elasticsearch, writes visible at the next periodic refresh (refresh wait_for)', harness('wait_for'));

describe('the Elasticsearch summary store', () => {
  it('refreshes its index every 250 ms, also an index created before with the default interval', async () => {
    const node = engineEndpoint('elasticsearch');
    const indexPrefix = `gm-test-${randomUUID()}`;
    const { concrete, alias } = esSummaryIndexNames(indexPrefix);
    const admin = new Client({ node });
    const intervalOf = async () => {
      const settings = await admin.indices.getSettings({ index: concrete });
      return settings[concrete]?.settings?.index?.refresh_interval;
    };
    try {
      // An index as an older deployment left it: no refresh_interval of its own (1 s).
      await admin.indices.create({ index: concrete, aliases: { [alias]: {} } });
      expect(await intervalOf()).toBeUndefined();
      const store = createElasticsearchSummaryStore({ node, indexPrefix });
      try {
        expect(await store.count()).toBe(0);
        expect(await intervalOf()).toBe('250ms');
      } finally {
        await store.close();
      }
    } finally {
      await admin.indices.delete({ index: concrete, ignore_unavailable: true });
      await admin.close();
    }
  });
});
