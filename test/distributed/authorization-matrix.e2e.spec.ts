import { authorizationMatrixSuite } from '../e2e/suites/authorization-matrix.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The authorization matrix on the separate processes and real engines. */
authorizationMatrixSuite((env) => startDistributedTestRuntime(env));
