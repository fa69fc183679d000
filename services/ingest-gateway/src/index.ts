export * from './gateway.ts';
