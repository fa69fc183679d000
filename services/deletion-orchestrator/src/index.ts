export * from './orchestrator.ts';
