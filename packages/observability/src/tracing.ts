import { basename, dirname } from 'node:path';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { onTracingShutdown } from './trace-lifecycle.ts';

/** The service a process runs, from its entry script (`services/<name>/src/main.ts`; the embedded runtime otherwise). */
export function serviceNameOf(entry: string | undefined): string {
  if (entry !== undefined && basename(dirname(dirname(dirname(entry)))) === 'services') return basename(dirname(dirname(entry)));
  return 'governed-memory';
}

/** The probes' and scrapers' routes: no span for them (they would drown the traces). */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
const pathOf = (url: string | undefined) => (url ?? '').split('?')[0] ?? '';

let running: NodeSDK | undefined;

/**
 * The OpenTelemetry SDK, loaded only where tracing was asked for (register-tracing.ts; tests).
 * Starts the SDK with the HTTP (server and client), undici (fetch and the Elasticsearch client)
 * and ioredis instrumentations. The log's hops are traced by @gm/bus (`tracedBus`), not by
 * kafkajs' instrumentation: the buses batch and commit in transactions, so the context active
 * when kafkajs sends is not the one each message belongs to. Attributes are ids and decisions:
 * an incoming request's query string is redacted, a Redis command keeps its name only, and
 * no baggage is taken from callers.
 * `spanProcessors` replaces the exporter the env names (tests: the in-memory exporter).
 */
export function startTracing(options: { serviceName: string; spanProcessors?: SpanProcessor[] }): void {
  if (running !== undefined) return;
  // Traces only: metrics stay Prometheus' and logs pino's, whatever the SDK's defaults.
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  running = new NodeSDK({
    // W3C trace context only: a caller's baggage (its own data, up to 8 KB) stays out of our context.
    textMapPropagator: new W3CTraceContextPropagator(),
    ...(process.env.OTEL_SERVICE_NAME === undefined ? { serviceName: options.serviceName } : {}),
    ...(options.spanProcessors === undefined ? {} : { spanProcessors: options.spanProcessors }),
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has(pathOf(request.url)),
        // A query string may name what was asked for (its attributes apply after the instrumentation's own).
        startIncomingSpanHook: (request) => ((request.url ?? '').includes('?') ? { 'url.query': 'REDACTED' } : {}),
      }),
      new UndiciInstrumentation(),
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  });
  running.start();
  const sdk = running;
  onTracingShutdown(async () => {
    running = undefined;
    await sdk.shutdown().catch(() => undefined);
  });
}
