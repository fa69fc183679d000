import { startTestRuntime } from './harness.ts';
import { lifecycleSuite } from './suites/lifecycle.suite.ts';

/** The lifecycle suite on the embedded runtime; test/distributed runs it on the stack. */
lifecycleSuite((env) => startTestRuntime(env));
