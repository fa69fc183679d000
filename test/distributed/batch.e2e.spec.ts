import { batchSuite } from '../e2e/suites/batch.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's batch suite, unchanged, on the seven processes and real engines. */
batchSuite((env) => startDistributedTestRuntime(env));
