import { cryptoSuite } from '../e2e/suites/crypto.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** The crypto-shredding suite on the seven processes: Kafka segments on disk, memory.keys on Kafka. */
cryptoSuite((env) => startDistributedTestRuntime(env));
