export * from './partition.ts';
export * from './ttl.ts';
export * from './deletion-targets.ts';
export * from './memory/index.ts';
export * from './ranking/rank.ts';
export * from './ranking/budget.ts';
export * from './summary/extractive.ts';
export * from './deletion/index.ts';
