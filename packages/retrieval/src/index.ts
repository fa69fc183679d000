export * from './retrieval.ts';
