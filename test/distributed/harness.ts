import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type Stack } from '@gm/distributed';
import { DistributedEnv, WithElasticsearch, WithRedis, openIndex, openState } from '@gm/service-kit';
import { apiClient, capabilityIssuer, type TestRuntime } from '../e2e/harness.ts';

/** The distributed runtime under test: the stack's processes, and its namespace on the engines. */
export interface DistributedTestRuntime extends TestRuntime {
  readonly stack: Stack;
  readonly dataDir: string;
  readonly namespace: string;
}

/**
 * The seven services as separate processes on Kafka, Elasticsearch and Redis, in a namespace
 * of their own; the test reads the same Redis keys and Elasticsearch indices the services
 * write. Time is real here: `advance` waits, so suites keep their time steps short.
 */
export async function startDistributedTestRuntime(env: Record<string, string> = {}): Promise<DistributedTestRuntime> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-dist-e2e-'));
  const namespace = `e2e-${randomUUID().slice(0, 8)}`;
  const lines: string[] = [];
  const options = {
    dataDir, port: 0, namespace,
    onLine: (service: string, line: string) => lines.push(`[${service}] ${line}`),
    env: {
      MEMORY_LOG_LEVEL: 'info', MEMORY_EXPIRY_TICK: '50ms', MEMORY_DELETION_VERIFY_RETRY: '50ms',
      MEMORY_RATE_LIMIT_PER_MINUTE: '100000', ...env,
    },
  };
  let stack = await startStack(options);
  const engineEnv = { ...DistributedEnv.parse(stack.env), ...WithRedis.parse(stack.env), ...WithElasticsearch.parse(stack.env) };
  const state = openState(engineEnv);
  const index = openIndex(engineEnv);
  const api = apiClient(() => stack.url);
  const credential = () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();

  return {
    kind: 'distributed',
    get stack() {
      return stack;
    },
    get url() {
      return stack.url;
    },
    dataDir,
    namespace,
    state,
    index,
    logs: { lines },
    now: () => Date.now(),
    advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    api,
    issue: capabilityIssuer(api, credential),
    digest: async () => ({ projection: await state.projectionDigest(), index: await index.digest() }),
    async restart() {
      await stack.stop();
      stack = await startStack(options);
    },
    async close() {
      await stack.stop();
      await Promise.all([state.kv.close(), index.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
