import type { FastifyInstance } from 'fastify';
import type { BrokerDeps } from '../deps.ts';
import { openApiDocument } from '../openapi.ts';

export function healthRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await deps.ready().catch(() => false);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready' });
  });
  app.get('/metrics', async (_request, reply) => {
    if (deps.exposition !== undefined) {
      const { contentType, text } = await deps.exposition();
      return reply.type(contentType).send(text);
    }
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  const doc = openApiDocument();
  app.get('/openapi.json', async () => doc);
}
