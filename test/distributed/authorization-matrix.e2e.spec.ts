import { authorizationMatrixSuite } from '../e2e/suites/authorization-matrix.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The embedded runtime's authorization matrix, unchanged, on the stack and real engines. */
authorizationMatrixSuite((env) => startDistributedTestRuntime(env));
