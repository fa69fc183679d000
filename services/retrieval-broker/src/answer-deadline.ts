import { GovernedMemoryError } from '@gm/contracts';
import type { FastifyInstance } from 'fastify';

/**
 * Every request is answered within `ms` of its headers: one still waiting then gets a retriable
 * `MEM_TIMEOUT` (503 with Retry-After, through the app's error handler) rather than no answer.
 * The handlers bound each wait they know of; this bounds the ones nobody knew of — a dependency
 * that hangs without failing, as Kafka clients did while brokers restarted in the fault suite
 * (docs/reliability.md). The work goes on unobserved: a write may still land, and a retry with the
 * same Idempotency-Key gets its result. Its late answer is dropped (Fastify logs it as already sent).
 */
export function answerWithin(app: FastifyInstance, ms: number): void {
  app.addHook('onRequest', (request, reply, done) => {
    const timer = setTimeout(() => {
      if (reply.sent) return;
      request.log.warn({ reqId: request.id, method: request.method, route: request.routeOptions.url ?? 'unmatched', ms }, 'request not answered in time; answered 503');
      void reply.send(new GovernedMemoryError(
        'MEM_TIMEOUT',
        `no answer within ${ms} ms (MEMORY_REQUEST_TIMEOUT); the request may still take effect: retry a write with the same Idempotency-Key to get its result`,
        { retriable: true },
      ));
    }, ms);
    // The response written, or the connection gone: nothing left to answer.
    reply.raw.once('close', () => clearTimeout(timer));
    done();
  });
}
