export * from './vector-indexer.ts';
