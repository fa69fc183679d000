export * from './vector-indexer.ts';
export * from './vector-targets.ts';
