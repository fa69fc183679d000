import { startTestRuntime } from './harness.ts';
import { policyModelSuite } from './suites/policy-model.suite.ts';

/** The administration plane's model test on the embedded runtime: 1,000 sequences (test/distributed runs fewer on the stack). */
policyModelSuite((env) => startTestRuntime(env), { runs: 1000, maxSteps: 14 });
