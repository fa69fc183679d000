import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * Where the real engines of the distributed runtime are, in the order of design §11:
 *   1. KAFKA_BROKERS / ELASTICSEARCH_URL / REDIS_URL when set;
 *   2. containers when a container runtime answers (containers.ts, the vitest global setup);
 *   3. otherwise the local launcher (infra/local/engines.sh), which .ci/run also uses.
 * A missing engine fails the run loudly; it is never skipped.
 */
export const LOCAL_ENDPOINTS = {
  kafka: { env: 'KAFKA_BROKERS', value: '127.0.0.1:19092' },
  redis: { env: 'REDIS_URL', value: 'redis://127.0.0.1:16379' },
  elasticsearch: { env: 'ELASTICSEARCH_URL', value: 'http://127.0.0.1:19200' },
} as const;

export type Engine = keyof typeof LOCAL_ENDPOINTS;

/** The endpoint of an engine inside a test (set by the global setup). */
export function engineEndpoint(engine: Engine): string {
  const { env } = LOCAL_ENDPOINTS[engine];
  const value = process.env[env];
  if (!value) throw new Error(`${env} is not set: run the engine suites through vitest's global setup (pnpm test)`);
  return value;
}

/** Redis named by its Sentinels instead of REDIS_URL (the local cluster, docs/reliability.md). */
const REDIS_SENTINEL_ENV = ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME'] as const;
const redisBySentinels = (): boolean => Boolean(process.env.REDIS_SENTINELS);

/** Whether the environment says where `engine` runs: its URL, or for Redis its Sentinels. */
export function namedByEnv(engine: Engine): boolean {
  return Boolean(process.env[LOCAL_ENDPOINTS[engine].env]) || (engine === 'redis' && redisBySentinels());
}

/**
 * The variables that name every engine for a service: each URL from the env or the local
 * launcher's, and for Redis named by Sentinels those instead (a service refuses both).
 */
export function engineEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [engine, endpoint] of Object.entries(LOCAL_ENDPOINTS)) {
    if (engine === 'redis' && redisBySentinels()) {
      for (const name of REDIS_SENTINEL_ENV) {
        const value = process.env[name];
        if (value !== undefined) env[name] = value;
      }
    } else {
      env[endpoint.env] = process.env[endpoint.env] ?? endpoint.value;
    }
  }
  return env;
}

const ROOT = path.resolve(import.meta.dirname, '../../../..');

/**
 * Starts, with the local launcher, every engine in `engines` the env does not name, and sets
 * its env URL. The launcher returns at once for an engine that already runs.
 */
export function startLocalEngines(engines: readonly Engine[]): void {
  const missing = engines.filter((engine) => !namedByEnv(engine));
  if (missing.length === 0) return;
  process.stderr.write(`[engines] starting with infra/local/engines.sh: ${missing.join(', ')}\n`);
  const started = spawnSync('bash', [path.join(ROOT, 'infra/local/engines.sh'), 'start', ...missing], {
    cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], timeout: 15 * 60_000,
  });
  if (started.status !== 0) {
    throw new Error(`the local engines did not start (${missing.join(', ')}): see the output above — engine suites are never skipped`);
  }
  for (const engine of missing) process.env[LOCAL_ENDPOINTS[engine].env] = LOCAL_ENDPOINTS[engine].value;
}
