export * from './ulid.ts';
export * from './derived.ts';
