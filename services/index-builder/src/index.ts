export * from './index-builder.ts';
export * from './index-document.ts';
export * from './index-targets.ts';
export * from './summaries.ts';
