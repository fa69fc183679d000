import type { FastifyInstance } from 'fastify';
import { GovernedMemoryError } from '@gm/contracts';
import { authorized } from '../authorization.ts';
import type { BrokerDeps } from '../deps.ts';

/**
 * GET /v1/ops/overview: consumer lag, dead letters and throughput (ops/overview.ts), for an
 * administrator (Cedar's `admin` on the tenant) — of an operating tenant when
 * MEMORY_OPS_TENANTS names them. The numbers are the deployment's, not one tenant's: a host of
 * several tenants keeps them to its own. They carry no ids and no content.
 */
export function opsRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  app.get('/v1/ops/overview', async (request) => {
    const { claims } = authorized(request, 'tenant');
    const tenants = deps.config.opsTenants;
    if (tenants !== undefined && !tenants.includes(claims.tenant)) {
      throw new GovernedMemoryError('CAP_SCOPE_DENIED', "the operations overview is for the administrators of this deployment's operating tenants (MEMORY_OPS_TENANTS)");
    }
    return deps.ops.read();
  });
  app.addHook('onClose', async () => deps.ops.close());
}
