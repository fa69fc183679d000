export * from './capabilities.ts';
export * from './pdp.ts';
export * from './cedar/cedar-pdp.ts';
export * from './cedar/policy-set.ts';
export * from './cached-source.ts';
export * from './receipts.ts';
export * from './load-or-exit.ts';
export * from './producer-proof.ts';
