export * from './retrieval.ts';
export * from './history.ts';
