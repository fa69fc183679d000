export * from './thread-lock.ts';
export * from './file-write-locks.ts';
export * from './worker-exec-argv.ts';
export * from './sqlite-erasure.ts';
export * from './open-sqlite.ts';
