import { startTestRuntime } from './harness.ts';
import { forgettingSuite } from './suites/forgetting.suite.ts';

/** The forgetting attacks on the embedded runtime; test/distributed runs them on the stack. */
forgettingSuite(() => startTestRuntime());
