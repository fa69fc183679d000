import { startTestRuntime } from './harness.ts';
import { authorizationMatrixSuite } from './suites/authorization-matrix.suite.ts';

/** The authorization matrix on the embedded runtime; test/distributed runs it on the stack. */
authorizationMatrixSuite((env) => startTestRuntime(env));
