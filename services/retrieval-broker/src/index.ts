export * from './app.ts';
export * from './deps.ts';
export * from './command-gateway.ts';
export * from './deletion-targets.ts';
export * from './retrieval.ts';
export * from './problem.ts';
export * from './start.ts';
