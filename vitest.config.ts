import { defineConfig } from 'vitest/config';

/**
 * The governance benchmark's specs: no engines. A project of their own (they ran with V8's
 * optimising tiers off on Node 20, whose deoptimizer crashed in long runs; Node 24 does not).
 */
const GOVBENCH_SUITES = 'test/govbench/**/*.spec.ts';

/** Suites of the real engines' adapters and of the distributed runtime. */
const ENGINE_SUITES = ['packages/*/src/{kafka,redis,elasticsearch}/**/*.spec.ts', 'services/*/src/kafka/**/*.spec.ts', 'test/distributed/**/*.spec.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The JSON report lets .ci/run print a plain 'N passed, N failed' line.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'embedded',
          include: ['packages/*/src/**/*.spec.ts', 'services/*/src/**/*.spec.ts', 'apps/*/src/**/*.spec.ts', 'test/**/*.spec.ts', 'scripts/**/*.spec.ts'],
          exclude: ['**/node_modules/**', ...ENGINE_SUITES, GOVBENCH_SUITES],
        },
      },
      {
        extends: true,
        test: {
          name: 'govbench',
          include: [GOVBENCH_SUITES],
        },
      },
      {
        extends: true,
        test: {
          name: 'engines',
          include: ENGINE_SUITES,
          globalSetup: ['packages/testing/src/infra/global-setup.ts'],
          // One engine each: suites isolate by prefixes, but share the broker's CPU.
          fileParallelism: false,
        },
      },
    ],
  },
});
