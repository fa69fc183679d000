import { startTestRuntime } from './harness.ts';
import { consistencySuite } from './suites/consistency.suite.ts';

/** The consistency-token suite on the embedded runtime; test/distributed runs it on the stack. */
consistencySuite((env) => startTestRuntime(env));
