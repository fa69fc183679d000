import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Relative on purpose: @gm/testing depends on this package, so a workspace import would be a cycle.
import { testSummaryStore } from '../../../testing/src/contracts/summary-store.contract.ts';
import type { SummaryStoreHarness } from '../../../testing/src/contracts/summary-store.contract.ts';
import type { SummaryStore } from '../summary-port.ts';
import { createSqliteSummaryStore } from './sqlite-summary-store.ts';

async function harness(): Promise<SummaryStoreHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-summaries-'));
  const file = join(dir, 'summaries.db');
  const opened: SummaryStore[] = [];
  const open = (): SummaryStore => {
    const store = createSqliteSummaryStore({ file });
    opened.push(store);
    return store;
  };
  return {
    store: open(),
    reopen: async () => open(),
    cleanup: async () => {
      for (const store of opened) await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

testSummaryStore('sqlite', harness);
