import type { FastifyInstance } from 'fastify';
import { adminDepsOf, authorizeTenantAdmin } from '../admin-authz.ts';
import { authenticate } from '../auth.ts';
import type { BrokerDeps } from '../deps.ts';

/**
 * GET /v1/ops/overview: consumer lag, dead letters and throughput (ops/overview.ts), for an
 * administrator (Cedar's `admin` on some resource). The numbers are the deployment's, not one
 * tenant's; they carry no ids and no content.
 */
export function opsRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  const admin = adminDepsOf(deps);
  app.get('/v1/ops/overview', async (request) => {
    const claims = await authenticate(request, deps.verifier, deps.clock, 'admin');
    await authorizeTenantAdmin(admin, claims);
    return deps.ops.read();
  });
  app.addHook('onClose', async () => deps.ops.close());
}
