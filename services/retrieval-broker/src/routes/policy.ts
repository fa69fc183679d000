import type { FastifyInstance } from 'fastify';
import { newUlid } from '@gm/ids';
import {
  AddDelegationRequest, AddGrantRequest, GovernedMemoryError, PlaceLegalHoldRequest, PolicyActionRequest,
  type CapabilityClaims,
} from '@gm/contracts';
import { inScope } from '@gm/policy';
import {
  adminDepsOf, authorizeAdmin, authorizeCapabilityRevocation, authorizeDelegation, authorizeGrant, authorizeTenantAdmin, mayRevokeDelegation,
} from '../admin-authz.ts';
import { bearer } from '../auth.ts';
import type { BrokerDeps } from '../deps.ts';
import { parseBody, pathId } from '../http.ts';

/** §5.2 for policy: the tenant comes from the capability; a body naming another is impersonation. */
function checkTenant(claims: CapabilityClaims, body: { tenant?: string | undefined }): void {
  if (body.tenant !== undefined && body.tenant !== claims.tenant) {
    throw new GovernedMemoryError('MEM_IMPERSONATION', 'the body names another tenant than the capability');
  }
}

const notFound = (what: string) => new GovernedMemoryError('MEM_NOT_FOUND', `no such ${what}`);

/**
 * Administration (issue 4): grants, delegations, capability and agent revocation, legal holds.
 * Every route produces one change on policy.changes and answers once the policy projector has
 * applied it, with the policy revision it produced. Bodies are validated before anything is
 * produced; unknown fields are rejected.
 */
export function policyRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  const verify = (request: Parameters<typeof bearer>[0]) => deps.verifier.verify(bearer(request), deps.clock.now());
  const admin = adminDepsOf(deps);

  app.post('/v1/grants', async (request, reply) => {
    const claims = await verify(request);
    const req = parseBody(AddGrantRequest, request.body);
    checkTenant(claims, req);
    const by = await authorizeGrant(admin, claims, req);
    const { tenant: _tenant, grantId: requested, ...rest } = req;
    const grantId = requested ?? newUlid();
    const existing = await deps.state.policies.grant(claims.tenant, grantId);
    // Re-adding an id rewrites the grant; an id of a grant on a resource outside this admin's scopes is not its to rewrite.
    if (existing && !inScope(claims, existing.resource)) throw new GovernedMemoryError('MEM_ID_TAKEN', 'this grant id is in use');
    const policyRevision = await deps.policy.submit(claims, 'GrantAdded', { grant: { ...rest, grantId, tenant: claims.tenant } });
    // Ids and the decision only: who vouched for a resource's first administrator is audit.
    if (by === 'bootstrap') request.log.info({ grantId, tenant: claims.tenant, principal: rest.principal.id, agent: claims.sub }, 'admin bootstrap: the first admin grant of a resource, on the issuer\'s word');
    return reply.code(201).send({ grantId, policyRevision });
  });

  app.delete('/v1/grants/:id', async (request, reply) => {
    const claims = await verify(request);
    const grant = await deps.state.policies.grant(claims.tenant, pathId(request, 'id'));
    if (!grant || !inScope(claims, grant.resource)) throw notFound('grant');
    await authorizeAdmin(admin, claims, [grant.resource]);
    const policyRevision = await deps.policy.submit(claims, 'GrantRemoved', { grantId: grant.grantId });
    return reply.code(202).send({ policyRevision });
  });

  app.post('/v1/delegations', async (request, reply) => {
    const claims = await verify(request);
    const req = parseBody(AddDelegationRequest, request.body);
    checkTenant(claims, req);
    if (req.delegatorId !== undefined && req.delegatorId !== claims.act.sub) {
      throw new GovernedMemoryError('MEM_IMPERSONATION', 'the delegator is the capability\'s principal');
    }
    await authorizeDelegation(admin, claims, req);
    const { tenant: _tenant, delegatorId: _delegator, delegationId: requested, ...rest } = req;
    const delegationId = requested ?? newUlid();
    const existing = await deps.state.policies.delegation(claims.tenant, delegationId);
    // A delegation id names one delegation forever: a revoked one is never silently revived.
    if (existing) throw new GovernedMemoryError('MEM_ID_TAKEN', 'this delegation id is in use');
    const delegation = { ...rest, delegationId, tenant: claims.tenant, delegatorId: claims.act.sub, actions: [...new Set(rest.actions)] };
    const policyRevision = await deps.policy.submit(claims, 'DelegationAdded', { delegation });
    return reply.code(201).send({ delegationId, policyRevision });
  });

  app.post('/v1/delegations/:id/revoke', async (request, reply) => {
    const claims = await verify(request);
    checkTenant(claims, parseBody(PolicyActionRequest, request.body));
    const delegation = await deps.state.policies.delegation(claims.tenant, pathId(request, 'id'));
    if (!delegation || !(await mayRevokeDelegation(admin, claims, delegation))) throw notFound('delegation');
    const policyRevision = await deps.policy.submit(claims, 'DelegationRevoked', { delegationId: delegation.delegationId });
    return reply.code(202).send({ policyRevision });
  });

  /**
   * The issuer recorded every jti it signed with its tenant, agent and expiry. A jti that is
   * unknown, expired or of another tenant answers 202 like any other and changes nothing: the
   * answer tells no one whether it exists, and no tenant can revoke another's capabilities.
   */
  app.post('/v1/capabilities/:jti/revoke', async (request, reply) => {
    const claims = await verify(request);
    checkTenant(claims, parseBody(PolicyActionRequest, request.body));
    const jti = pathId(request, 'jti');
    const issued = await deps.state.issuedCapabilities.get(jti);
    const expiresAt = jti === claims.jti
      ? new Date(claims.exp * 1000).toISOString()
      : issued?.tenant === claims.tenant ? issued.expiresAt : undefined;
    const own = jti === claims.jti || (issued?.tenant === claims.tenant && issued.agentId === claims.sub);
    authorizeCapabilityRevocation(claims, own);
    const policyRevision = expiresAt === undefined
      ? await deps.state.policyRevisions.current(claims.tenant)
      : await deps.policy.submit(claims, 'CapabilityRevoked', { jti, expiresAt });
    return reply.code(202).send({ policyRevision });
  });

  app.post('/v1/agents/:id/revoke', async (request, reply) => {
    const claims = await verify(request);
    checkTenant(claims, parseBody(PolicyActionRequest, request.body));
    await authorizeTenantAdmin(admin, claims);
    const policyRevision = await deps.policy.submit(claims, 'AgentRevoked', { agentId: pathId(request, 'id') });
    return reply.code(202).send({ policyRevision });
  });

  app.post('/v1/legal-holds', async (request, reply) => {
    const claims = await verify(request);
    const req = parseBody(PlaceLegalHoldRequest, request.body);
    checkTenant(claims, req);
    await authorizeTenantAdmin(admin, claims);
    const holdId = req.holdId ?? newUlid();
    if (await deps.state.policies.legalHold(claims.tenant, holdId)) throw new GovernedMemoryError('MEM_ID_TAKEN', 'this legal hold id is in use');
    const hold = { holdId, tenant: claims.tenant, subjectId: req.subjectId, reason: req.reason };
    const policyRevision = await deps.policy.submit(claims, 'LegalHoldPlaced', { hold });
    return reply.code(201).send({ holdId, policyRevision });
  });

  app.get('/v1/legal-holds', async (request) => {
    const claims = await verify(request);
    await authorizeTenantAdmin(admin, claims);
    return { items: await deps.state.policies.legalHolds(claims.tenant) };
  });

  app.delete('/v1/legal-holds/:id', async (request, reply) => {
    const claims = await verify(request);
    await authorizeTenantAdmin(admin, claims);
    const hold = await deps.state.policies.legalHold(claims.tenant, pathId(request, 'id'));
    if (!hold) throw notFound('legal hold');
    const policyRevision = await deps.policy.submit(claims, 'LegalHoldReleased', { holdId: hold.holdId });
    return reply.code(202).send({ policyRevision });
  });
}
