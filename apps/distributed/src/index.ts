export * from './stack.ts';
