export * from './config.ts';
export * from './runtime.ts';
export * from './replay.ts';
export * from './credentials.ts';
export * from './master-keys.ts';
export * from './stores.ts';
