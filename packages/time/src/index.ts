export * from './clocks.ts';
export * from './periodic.ts';
