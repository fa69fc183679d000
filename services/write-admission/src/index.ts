export * from './admission.ts';
