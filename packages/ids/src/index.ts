export * from './ulid.ts';
export * from './derived.ts';
export * from './key-encoding.ts';
