export * from './open.ts';
export * from './run-service.ts';
