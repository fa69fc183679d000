import type { FastifyInstance } from 'fastify';
import { asErrorCode } from '@gm/contracts';
import { authorized } from '../authorization.ts';
import type { BrokerDeps } from '../deps.ts';
import { problemOf } from '../problem.ts';

export function commandRoutes(app: FastifyInstance, _deps: BrokerDeps): void {
  /** How far an asynchronous write got; only the principal whose capability wrote it may ask (the table's `command`). */
  app.get('/v1/commands/:commandId', async (request) => {
    const { commandId, outcome } = authorized(request, 'command');
    switch (outcome.state) {
      case 'pending':
        return { commandId, state: 'pending' };
      case 'accepted':
        return { commandId, state: 'accepted', ...outcome.result };
      case 'rejected':
        return { commandId, state: 'rejected', error: problemOf(asErrorCode(outcome.code), outcome.detail, request.id) };
    }
  });
}
