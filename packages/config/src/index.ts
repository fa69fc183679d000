export * from './primitives.ts';
export * from './shared.ts';
export * from './env-reference.ts';
export * from './service-address.ts';
export * from './runtime-proof.ts';
