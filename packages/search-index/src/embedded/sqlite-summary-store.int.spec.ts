import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testSummaryStore } from '@gm/testing/contracts/summary-store';
import type { SummaryStoreHarness } from '@gm/testing/contracts/summary-store';
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
