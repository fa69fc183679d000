export * from './decider-spec.ts';
export * from './contracts/bus.contract.ts';
export * from './contracts/search-index.contract.ts';
export * from './contracts/key-value.contract.ts';
export * from './contracts/policy-store.contract.ts';
export * from './embedded-fixture.ts';
export * from './infra/engines.ts';
export * from './contracts/summary-store.contract.ts';
