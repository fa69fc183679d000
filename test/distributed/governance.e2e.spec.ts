import { governanceSuite } from '../e2e/suites/governance.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The two-team governance fixture on the seven processes and real engines. */
governanceSuite((env) => startDistributedTestRuntime(env));
