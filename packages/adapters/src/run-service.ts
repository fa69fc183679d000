import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { ServiceHandle } from '@gm/contracts';
import { isPartitionCountMismatch } from '@gm/bus';
import { EnvConfigError, WithRedis, readsVariable, redisEnvProblems } from '@gm/config';
import { isCryptoError } from '@gm/crypto';
import { createLogger, createMetrics, shutdownTracing, tracingRequested, tracingStarted, type Logger, type Metrics } from '@gm/observability';
import { UnsafeTopicsError } from './open.ts';

export interface Started {
  handle: ServiceHandle;
  /** Whether every dependency of this service answers. */
  ready(): Promise<boolean>;
}

export interface ServiceContext<E> {
  env: E;
  log: Logger;
  metrics: Metrics;
}

/**
 * Parses the environment or exits with code 2 and one line per problem, naming the variable.
 * The Redis variables are also judged together (one server or Sentinels, not both): the
 * services compose their schemas from shapes, which carry no cross-field check.
 */
export function parseEnvOrExit<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv, service: string): z.infer<S> {
  const parsed = schema.safeParse(env);
  const lines = parsed.success ? [] : parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
  if (readsVariable(schema, 'REDIS_URL')) {
    const redis = WithRedis.safeParse(env);
    if (redis.success) lines.push(...redisEnvProblems(redis.data).map((p) => `  ${p.variable}: ${p.message}`));
  }
  if (parsed.success && lines.length === 0) return parsed.data;
  process.stderr.write(`${service}: invalid configuration:\n${lines.join('\n')}\n`);
  process.exit(2);
}

/** An address a local launcher can dial for a server listening on `host` (every interface: loopback). */
function dialable(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** Liveness, readiness and Prometheus metrics of one service process, on `HEALTH_HOST` (loopback by default). */
function healthServer(host: string, port: number, ready: () => Promise<boolean>, metrics: Metrics): Promise<Server> {
  const server = createServer((req, res) => {
    void (async () => {
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      } else if (req.url === '/readyz') {
        const ok = await ready().catch(() => false);
        res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ready' : 'not_ready' }));
      } else if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
      } else {
        res.writeHead(404).end();
      }
    })();
  });
  return new Promise((resolve, reject) => {
    // An address this host does not have (EADDRNOTAVAIL), a name that does not resolve, a port in use.
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/**
 * The composition root shared by every service's main.ts: env (fail fast), logger, metrics,
 * health endpoints, start, and a graceful stop on SIGTERM/SIGINT (finish the in-flight
 * message, commit, close, exit 0).
 */
export async function runService<S extends z.ZodType<{ HEALTH_HOST: string; HEALTH_PORT: number; MEMORY_LOG_LEVEL: string }>>(
  name: string,
  schema: S,
  start: (ctx: ServiceContext<z.infer<S>>) => Promise<Started>,
): Promise<void> {
  const env = parseEnvOrExit(schema, process.env, name);
  const log = createLogger({ name, level: env.MEMORY_LOG_LEVEL });
  const metrics = createMetrics();
  if (tracingRequested(process.env) && !tracingStarted()) {
    // The SDK must load before the service's modules (docs/operations.md#traces): say so rather than trace nothing in silence.
    log.warn('OTEL_* asks for traces, but this process was not started with --import ./packages/observability/src/register-tracing.ts: no traces');
  }
  let started: Started;
  try {
    started = await start({ env, log, metrics });
  } catch (err) {
    // A missing, malformed or wrong master key: a configuration problem, said on one line.
    if (isCryptoError(err, 'MASTER_KEY_CONFIG') || isCryptoError(err, 'MASTER_KEY_MISMATCH')) {
      log.fatal({ reason: err.reason }, 'master key problem');
      process.stderr.write(`${name}: master key problem (${err.reason}): ${err.message}\n`);
      process.exit(2);
    }
    // Topics created with another partition count: starting would remap subjects.
    if (isPartitionCountMismatch(err)) {
      log.fatal({ topic: err.topic, existing: err.existing, wanted: err.wanted }, 'partition count mismatch');
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(2);
    }
    // Variables that parsed one by one but not together (a caller that skipped parseEnvOrExit).
    if (err instanceof EnvConfigError) {
      log.fatal({ variables: err.problems.map((p) => p.variable) }, 'invalid configuration');
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(2);
    }
    // A production deployment on topics that could lose acknowledged records (docs/reliability.md).
    if (err instanceof UnsafeTopicsError) {
      log.fatal({ problems: err.problems }, 'unsafe topics');
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(2);
    }
    log.fatal({ err }, 'failed to start');
    process.exit(1);
  }
  metrics.addReadinessCheck(started.ready);
  const health = await healthServer(env.HEALTH_HOST, env.HEALTH_PORT, started.ready, metrics).catch(async (err: unknown) => {
    // A configuration problem, said on one line, after the service let go of what it started.
    const code = (err as { code?: unknown }).code;
    log.fatal({ code, host: env.HEALTH_HOST, port: env.HEALTH_PORT }, 'health server cannot listen');
    process.stderr.write(`${name}: HEALTH_HOST/HEALTH_PORT: cannot listen on ${env.HEALTH_HOST}:${env.HEALTH_PORT} (${String(code ?? err)})\n`);
    await started.handle.close().catch(() => undefined);
    process.exit(2);
  });
  const port = (health.address() as AddressInfo).port;
  log.info({ healthPort: port, pid: process.pid }, 'service started');
  // One parseable line for launchers that wait for readiness.
  process.stderr.write(`${name} ready: health on http://${dialable(env.HEALTH_HOST)}:${port}\n`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    void (async () => {
      try {
        health.close();
        await started.handle.close();
        // The last spans (the in-flight batch's) leave before the process does.
        await shutdownTracing();
        process.exit(0);
      } catch (err) {
        log.error({ err }, 'stop failed');
        process.exit(1);
      }
    })();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
