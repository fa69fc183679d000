import { startTestRuntime } from './harness.ts';
import { governanceSuite } from './suites/governance.suite.ts';

/** The two-team governance fixture on the embedded runtime; test/distributed runs it on the stack. */
governanceSuite((env) => startTestRuntime(env));
