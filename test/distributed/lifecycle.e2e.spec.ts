import { lifecycleSuite } from '../e2e/suites/lifecycle.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's lifecycle suite, unchanged, on the seven processes and real engines. */
lifecycleSuite((env) => startDistributedTestRuntime(env));
