import { semanticSuite } from './suites/semantic.suite.ts';
import { startTestRuntime } from './harness.ts';

/** Semantic retrieval on the embedded runtime: vectors.db, the model in the pipeline's thread. */
semanticSuite((env) => startTestRuntime(env));
