import { semanticSuite } from '../e2e/suites/semantic.suite.ts';
import { startDistributedTestRuntime } from './harness.ts';

/** Semantic retrieval on the nine processes: the vector-indexer's own process, kNN in Elasticsearch. */
semanticSuite((env) => startDistributedTestRuntime(env));
