export * from './verifier.ts';
