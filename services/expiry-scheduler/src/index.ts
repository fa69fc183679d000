export * from './scheduler.ts';
