import { startTestRuntime } from './harness.ts';
import { asyncWritesSuite } from './suites/async-writes.suite.ts';

/** The asynchronous-write suite on the embedded runtime; test/distributed runs it on the stack. */
asyncWritesSuite((env) => startTestRuntime(env));
