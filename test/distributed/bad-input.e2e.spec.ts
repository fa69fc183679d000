import { badInputSuite } from '../e2e/suites/bad-input.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's bad-input suite, unchanged, on the seven processes and real engines. */
badInputSuite((env) => startDistributedTestRuntime(env));
