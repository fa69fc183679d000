import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { trace } from '@opentelemetry/api';
import { genAiOperationOf } from './genai-operations.ts';
import { GovernedMemoryError, LIMITS, isGovernedMemoryError } from '@gm/contracts';
import { apiReference } from './api-reference.ts';
import type { BrokerDeps } from './deps.ts';
import { clientErrorHandler, frameworkProblem, routerError } from './edge-errors.ts';
import { strictJsonBodies } from './json-body.ts';
import { allowedMethods } from './allowed-methods.ts';
import { answerWithin } from './answer-deadline.ts';
import { problemOf } from './problem.ts';
import { capabilityRoutes } from './routes/capabilities.ts';
import { runtimeProofRoutes } from './routes/runtime-proof.ts';
import { deletionRoutes } from './routes/deletion.ts';
import { healthRoutes } from './routes/health.ts';
import { memoryRoutes } from './routes/memories.ts';
import { commandRoutes } from './routes/commands.ts';
import { consoleRoutes } from './routes/console.ts';
import { opsRoutes } from './routes/ops.ts';
import { policyRoutes } from './routes/policy.ts';
import { searchRoutes } from './routes/search.ts';
import { summaryRoutes } from './routes/summaries.ts';
import { inRequestScope } from './query-audit.ts';
import { authorizationHook, operationOf } from './authorization.ts';
import { rateLimitKey } from './rate-limit-key.ts';

/** Probes that are never rate-limited. */
const UNLIMITED_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

export async function buildApp(deps: BrokerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast only drops pino-specific generics.
    loggerInstance: deps.log as FastifyBaseLogger,
    // Our own onResponse line logs the route pattern, never the raw URL or headers.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.bodyLimitBytes,
    requestTimeout: deps.config.requestTimeoutMs,
    genReqId: () => crypto.randomUUID(),
    // Every id routes (Fastify's default bound is 100 characters); anything longer is a 414.
    routerOptions: { maxParamLength: LIMITS.maxIdLength },
    frameworkErrors: routerError,
    clientErrorHandler: clientErrorHandler(deps.log),
    // Answered below instead, as problem+json: Fastify's own 503 has a body of its own shape.
    return503OnClosing: false,
  });

  // JSON only: a text body would otherwise reach the handlers as a string.
  app.removeContentTypeParser('text/plain');
  strictJsonBodies(app);

  const methodsOf = allowedMethods(app);
  /** 405 with `Allow` for a method the path does not serve; false when the path serves it or does not exist. */
  const refuseMethod = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const allowed = methodsOf(request.url.split('?')[0] ?? '');
    if (allowed.length === 0 || allowed.includes(request.method)) return false;
    void reply.code(405).header('allow', allowed.join(', ')).type('application/problem+json')
      .send(problemOf('MEM_METHOD_NOT_ALLOWED', `this path answers ${allowed.join(', ')} only`, request.id));
    return true;
  };
  app.setErrorHandler((err: FastifyError | GovernedMemoryError, request, reply) => {
    // Fastify checks a body method's Content-Type before routing: an undeclared QUERY without
    // one fails there, and is still a method the path does not serve.
    if (!isGovernedMemoryError(err) && err.code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE' && refuseMethod(request, reply)) return reply;
    if (isGovernedMemoryError(err)) {
      const body = problemOf(err.code, err.message, request.id);
      // A retriable 503 (the projections behind a token, a dependency briefly down) is load, not a fault: no stack.
      if (body.status >= 500 && err.retriable) {
        request.log.warn({ code: err.code, reqId: request.id }, 'request answered retriable');
        reply.header('retry-after', '1');
      }
      else if (body.status >= 500) request.log.error({ err, reqId: request.id }, 'request failed');
      return reply.code(body.status).type('application/problem+json').send(body);
    }
    const { status, code, detail } = frameworkProblem(err);
    if (status >= 500) request.log.error({ err, reqId: request.id }, 'request failed');
    return reply.code(status).type('application/problem+json').send(problemOf(code, detail, request.id, status));
  });
  app.setNotFoundHandler((request, reply) => {
    if (refuseMethod(request, reply)) return reply;
    return reply.code(404).type('application/problem+json').send(problemOf('MEM_NOT_FOUND', 'no such route', request.id));
  });
  // While closing, every request is a retriable 503 (the error handler adds Retry-After); Fastify adds Connection: close.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (request) => {
    // The HTTP server span (when traces are on) is named by the route pattern, never the URL.
    const route = request.routeOptions.url;
    const span = trace.getActiveSpan();
    if (span !== undefined && route !== undefined) {
      span.updateName(`${request.method} ${route}`);
      span.setAttribute('http.route', route);
      const operation = genAiOperationOf(operationOf(request.method, route));
      if (operation !== undefined) span.setAttribute('gen_ai.operation.name', operation);
    }
    if (closing) throw new GovernedMemoryError('MEM_UNAVAILABLE', 'this server is shutting down; retry', { retriable: true });
  });
  answerWithin(app, deps.config.requestTimeoutMs);
  // After the body is parsed (a parser's stream events would leave the scope): the query audit's request.
  app.addHook('preHandler', (request, _reply, done) => inRequestScope(request.id, done));
  // Then, before any handler: the authorization table's check (authorization.ts).
  authorizationHook(app, deps);
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.httpResponses.inc({ route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) });
    request.log.info(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  await app.register(rateLimit, {
    max: deps.config.rateLimitPerMinute,
    timeWindow: 60_000,
    // By route, not URL: a probe's query string does not make it count.
    allowList: (request) => UNLIMITED_ROUTES.has(request.routeOptions.url ?? ''),
    keyGenerator: rateLimitKey(deps),
    errorResponseBuilder: () => new GovernedMemoryError('MEM_RATE_LIMITED', 'too many requests for this capability; slow down'),
  });

  healthRoutes(app, deps);
  capabilityRoutes(app, deps);
  runtimeProofRoutes(app, deps);
  memoryRoutes(app, deps);
  commandRoutes(app, deps);
  searchRoutes(app, deps);
  summaryRoutes(app, deps);
  deletionRoutes(app, deps);
  policyRoutes(app, deps);
  opsRoutes(app, deps);
  consoleRoutes(app, deps);
  await apiReference(app);
  return app;
}
