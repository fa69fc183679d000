import { startTestRuntime } from './harness.ts';
import { batchSuite } from './suites/batch.suite.ts';

/** The batch suite on the embedded runtime; test/distributed runs it on the stack. */
batchSuite((env) => startTestRuntime(env));
