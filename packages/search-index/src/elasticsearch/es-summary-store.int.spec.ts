import { randomUUID } from 'node:crypto';
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
