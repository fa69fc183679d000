import { startTestRuntime } from './harness.ts';
import { cryptoSuite } from './suites/crypto.suite.ts';

/** Encryption at rest and crypto-shredding on the embedded runtime; test/distributed runs it on the stack. */
cryptoSuite((env) => startTestRuntime(env));
