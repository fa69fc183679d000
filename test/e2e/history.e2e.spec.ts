import { startTestRuntime } from './harness.ts';
import { historySuite } from './suites/history.suite.ts';

/** The record history suite on the embedded runtime; test/distributed runs it on the stack. */
historySuite((env) => startTestRuntime(env));
