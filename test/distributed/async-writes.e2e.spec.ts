import { asyncWritesSuite } from '../e2e/suites/async-writes.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's asynchronous-write suite, unchanged, on the seven processes and real engines. */
asyncWritesSuite((env) => startDistributedTestRuntime(env));
