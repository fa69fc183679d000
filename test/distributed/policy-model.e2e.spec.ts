import { policyModelSuite } from '../e2e/suites/policy-model.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The administration plane's model test on the processes and real engines: 200 sequences (each policy change crosses Kafka). */
policyModelSuite((env) => startDistributedTestRuntime(env), { runs: 200, maxSteps: 14 });
