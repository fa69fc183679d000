import { startTestRuntime } from './harness.ts';
import { badInputSuite } from './suites/bad-input.suite.ts';

/** The bad-input suite on the embedded runtime; test/distributed runs it on the stack. */
badInputSuite((env) => startTestRuntime(env));
