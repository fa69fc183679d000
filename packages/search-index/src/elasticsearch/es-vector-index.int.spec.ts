import { randomUUID } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
// @gm/testing depends on this package: a devDependency cycle that pnpm accepts (docs/architecture.md).
import { testVectorIndex } from '@gm/testing/contracts/vector-index';
import { engineEndpoint } from '@gm/testing/engines';
import { createElasticsearchVectorIndex, esVectorIndexNames } from './es-vector-index.ts';

testVectorIndex('elasticsearch (dense_vector, kNN with filter)', async () => {
  const node = engineEndpoint('elasticsearch');
  const indexPrefix = `gm-test-${randomUUID()}`;
  const index = createElasticsearchVectorIndex({ node, indexPrefix, dimensions: 8 });
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
});
