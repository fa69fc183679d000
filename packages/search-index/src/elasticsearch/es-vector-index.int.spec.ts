import { randomUUID } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testVectorIndex } from '@gm/testing/contracts/vector-index';
import { engineEndpoint } from '@gm/testing/engines';
import { createElasticsearchVectorIndex, esVectorIndexNames } from './es-vector-index.ts';

/** A fresh index per test (unique prefix), deleted afterwards; `refresh` as the index is opened with. */
const harness = (refresh?: boolean) => async () => {
  const node = engineEndpoint('elasticsearch');
  const indexPrefix = `gm-test-${randomUUID()}`;
  const index = createElasticsearchVectorIndex({ node, indexPrefix, dimensions: 8, ...(refresh === undefined ? {} : { refresh }) });
  return {
    index, dimensions: 8,
    cleanup: async () => {
      await index.close();
      const admin = new Client({ node });
      try {
        await admin.indices.delete({ index: esVectorIndexNames(indexPrefix).concrete, ignore_unavailable: true });
      } finally {
        await admin.close();
      }
    },
  };
};

testVectorIndex('elasticsearch (dense_vector, kNN with filter)', harness());
// The vector-indexer's mode: upserts visible at the next periodic refresh or when a reader asks, held to the same contract.
testVectorIndex('elasticsearch, upserts visible when a reader asks (refresh false)', harness(false));
