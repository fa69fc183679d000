export * from './projector.ts';
export * from './primary-target.ts';
