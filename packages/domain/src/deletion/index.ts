export * from './job.ts';
export * from './decide.ts';
export * from './evolve.ts';
