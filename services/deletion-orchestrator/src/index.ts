export * from './orchestrator.ts';
export * from './restore-jobs.ts';
