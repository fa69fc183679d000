export * from './port.ts';
export { createSqliteSearchIndex } from './embedded/sqlite-search-index.ts';
export { createElasticsearchSearchIndex, type ElasticsearchSearchIndexOptions } from './elasticsearch/es-search-index.ts';
export type { SqliteSearchIndexOptions } from './embedded/sqlite-search-index.ts';
export { indexDigest } from './embedded/digest.ts';
export type { DigestEntry } from './embedded/digest.ts';
