import type { FastifyInstance } from 'fastify';
import { IssueCapabilityRequest } from '@gm/contracts';
import type { BrokerDeps } from '../deps.ts';
import { parseBody } from '../http.ts';

export function capabilityRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  app.post('/v1/capabilities', async (request, reply) => {
    // The issuer credential was checked by the authorization hook (the table: `issuer`).
    const body = parseBody(IssueCapabilityRequest, request.body);
    const revision = await deps.state.policyRevisions.current(body.tenant);
    const issued = await deps.issuer.issue(body, deps.clock.now(), revision);
    // Kept until it expires: a revocation by jti learns the capability's tenant and lifetime.
    await deps.state.issuedCapabilities.record({
      jti: issued.jti, tenant: body.tenant, agentId: body.agentId, principalId: body.principal?.id ?? body.agentId, expiresAt: issued.expiresAt,
    });
    deps.log.info({ tenant: body.tenant, agentId: body.agentId, jti: issued.jti, actions: body.actions }, 'capability issued');
    return reply.code(201).send(issued);
  });
}
