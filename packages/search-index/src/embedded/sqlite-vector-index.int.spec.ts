import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testVectorIndex } from '@gm/testing/contracts/vector-index';
import { createSqliteVectorIndex } from './sqlite-vector-index.ts';

testVectorIndex('sqlite (exact scan of the filtered rows)', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-vectors-'));
  const index = createSqliteVectorIndex({ file: path.join(dir, 'vectors.db') });
  return {
    index, dimensions: 8,
    cleanup: async () => {
      await index.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
