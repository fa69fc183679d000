export * from './projector.ts';
export * from './primary-target.ts';
export * from './policy-projector.ts';
