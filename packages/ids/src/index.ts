export * from './ulid.ts';
