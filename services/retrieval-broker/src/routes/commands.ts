import type { FastifyInstance } from 'fastify';
import { GovernedMemoryError, asErrorCode } from '@gm/contracts';
import { authorized } from '../authorization.ts';
import type { BrokerDeps } from '../deps.ts';
import { problemOf } from '../problem.ts';

/** An unknown command and another principal's answer the same. */
const noSuchCommand = (): GovernedMemoryError => new GovernedMemoryError('MEM_NOT_FOUND', 'no such command');

export function commandRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  /** How far an asynchronous write got; only the principal whose capability wrote it may ask. */
  app.get('/v1/commands/:commandId', async (request) => {
    const { claims, commandId } = authorized(request, 'command');
    const outcome = await deps.state.commands.get(claims.tenant, commandId);
    if (outcome === null || outcome.principalId !== claims.act.sub) throw noSuchCommand();
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
