export * from './verifier.ts';
export * from './receipts.ts';
