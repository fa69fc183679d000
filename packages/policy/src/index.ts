export * from './capabilities.ts';
export * from './pdp.ts';
