import { historySuite } from '../e2e/suites/history.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's record history suite, unchanged, on the stack and real engines. */
historySuite((env) => startDistributedTestRuntime(env));
