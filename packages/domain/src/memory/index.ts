export * from './state.ts';
export * from './decide.ts';
export * from './evolve.ts';
export * from './ended.ts';
export * from './record-states.ts';
export * from './transitions.ts';
