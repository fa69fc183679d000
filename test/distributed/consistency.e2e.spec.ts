import { consistencySuite } from '../e2e/suites/consistency.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's consistency-token suite, unchanged, on the seven processes and real engines. */
consistencySuite((env) => startDistributedTestRuntime(env));
