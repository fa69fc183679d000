import { startTestRuntime } from './harness.ts';
import { authorizationMatrixSuite } from './suites/authorization-matrix.suite.ts';

/** Every operation as every persona on the embedded runtime; test/distributed runs the same suite on the stack. */
authorizationMatrixSuite((env) => startTestRuntime(env));
