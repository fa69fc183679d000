import type { FastifyInstance } from 'fastify';
import { newUlid } from '@gm/ids';
import { GovernedMemoryError, PlaceLegalHoldRequest, PolicyActionRequest, grantContent } from '@gm/contracts';
import { authorized, checkTenant } from '../authorization.ts';
import type { BrokerDeps } from '../deps.ts';
import { parseBody, pathId } from '../http.ts';

const notFound = (what: string) => new GovernedMemoryError('MEM_NOT_FOUND', `no such ${what}`);

/**
 * Administration (design §6.2): grants, delegations, capability and agent revocation, legal
 * holds. Who may call each is the authorization table's (authorization.ts) — these handlers only
 * act. Every route produces one change on policy.changes and answers once the policy projector
 * has applied it, with the policy revision it produced. Bodies are validated before anything is
 * produced; unknown fields are rejected.
 */
export function policyRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  /**
   * Grant ids are the server's and name one grant for ever (design §6.2): a grant is never
   * rewritten, only added and removed. Re-posting a grant that is there now — the same holder,
   * resource, role, purposes, restrictions and bounds — answers its id and changes nothing, so
   * a retry is safe; only someone who may manage the resource's grants gets that far.
   */
  app.post('/v1/grants', async (request, reply) => {
    const { claims, add } = authorized(request, 'grant');
    if (add === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'no grant to add');
    const { tenant: _tenant, ...rest } = add.request;
    const content = grantContent({ ...rest, restricted: rest.restricted ?? [] });
    const identical = async () => {
      const present = (await deps.state.policies.grants(claims.tenant)).find((g) => grantContent(g) === content);
      return present === undefined ? undefined : { grantId: present.grantId, policyRevision: await deps.state.policyRevisions.current(claims.tenant) };
    };
    const present = await identical();
    if (present !== undefined) return reply.code(201).send(present);
    const grantId = newUlid();
    let policyRevision: number;
    try {
      policyRevision = await deps.policy.submit(claims, 'GrantAdded', { grant: { ...rest, grantId, tenant: claims.tenant } });
    } catch (err) {
      // A racing post of the same grant was applied first (the fold's `grant-duplicate`): its id is this one's answer.
      const raced = err instanceof GovernedMemoryError && err.code === 'MEM_CONFLICT' ? await identical() : undefined;
      if (raced === undefined) throw err;
      return reply.code(201).send(raced);
    }
    // Ids and the decision only: who vouched for a resource's first administrator is audit.
    if (add.by === 'bootstrap') request.log.info({ grantId, tenant: claims.tenant, principal: rest.principal.id, agent: claims.sub }, 'admin bootstrap: the first admin grant of a resource, on the issuer\'s word');
    return reply.code(201).send({ grantId, policyRevision });
  });

  app.delete('/v1/grants/:id', async (request, reply) => {
    const { claims, remove } = authorized(request, 'grant');
    if (remove === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'no grant to remove');
    const policyRevision = await deps.policy.submit(claims, 'GrantRemoved', { grantId: remove.grantId });
    return reply.code(202).send({ policyRevision });
  });

  app.post('/v1/delegations', async (request, reply) => {
    const { claims, add } = authorized(request, 'delegation');
    if (add === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'no delegation to add');
    const { tenant: _tenant, delegatorId: _delegator, delegationId: requested, ...rest } = add;
    const delegationId = requested ?? newUlid();
    const existing = await deps.state.policies.delegation(claims.tenant, delegationId);
    // A delegation id names one delegation forever: a revoked one is never silently revived.
    if (existing) throw new GovernedMemoryError('MEM_ID_TAKEN', 'this delegation id is in use');
    const delegation = { ...rest, delegationId, tenant: claims.tenant, delegatorId: claims.act.sub, actions: [...new Set(rest.actions)] };
    const policyRevision = await deps.policy.submit(claims, 'DelegationAdded', { delegation });
    return reply.code(201).send({ delegationId, policyRevision });
  });

  app.post('/v1/delegations/:id/revoke', async (request, reply) => {
    const { claims, revoke } = authorized(request, 'delegation');
    checkTenant(claims, parseBody(PolicyActionRequest, request.body));
    if (revoke === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'no delegation to revoke');
    const policyRevision = await deps.policy.submit(claims, 'DelegationRevoked', { delegationId: revoke.delegationId });
    return reply.code(202).send({ policyRevision });
  });

  /**
   * The issuer recorded every jti it signed with its tenant, principal, agent and expiry. A jti
   * that is unknown, expired or of another tenant answers 202 like any other and changes nothing:
   * the answer tells no one whether it exists, and no tenant can revoke another's capabilities.
   * Who may ask at all (its own principal's, or a tenant administrator) is the table's.
   */
  app.post('/v1/capabilities/:jti/revoke', async (request, reply) => {
    const { claims } = authorized(request, 'capability');
    checkTenant(claims, parseBody(PolicyActionRequest, request.body));
    const jti = pathId(request, 'jti');
    const issued = await deps.state.issuedCapabilities.get(jti);
    const expiresAt = jti === claims.jti
      ? new Date(claims.exp * 1000).toISOString()
      : issued?.tenant === claims.tenant ? issued.expiresAt : undefined;
    const policyRevision = expiresAt === undefined
      ? await deps.state.policyRevisions.current(claims.tenant)
      : await deps.policy.submit(claims, 'CapabilityRevoked', { jti, expiresAt });
    return reply.code(202).send({ policyRevision });
  });

  app.post('/v1/agents/:id/revoke', async (request, reply) => {
    const { claims } = authorized(request, 'tenant');
    checkTenant(claims, parseBody(PolicyActionRequest, request.body));
    const policyRevision = await deps.policy.submit(claims, 'AgentRevoked', { agentId: pathId(request, 'id') });
    return reply.code(202).send({ policyRevision });
  });

  app.post('/v1/legal-holds', async (request, reply) => {
    const { claims } = authorized(request, 'tenant');
    const req = parseBody(PlaceLegalHoldRequest, request.body);
    checkTenant(claims, req);
    const holdId = req.holdId ?? newUlid();
    if (await deps.state.policies.legalHold(claims.tenant, holdId)) throw new GovernedMemoryError('MEM_ID_TAKEN', 'this legal hold id is in use');
    const hold = { holdId, tenant: claims.tenant, subjectId: req.subjectId, reason: req.reason };
    const policyRevision = await deps.policy.submit(claims, 'LegalHoldPlaced', { hold });
    return reply.code(201).send({ holdId, policyRevision });
  });

  app.get('/v1/legal-holds', async (request) => {
    const { claims } = authorized(request, 'tenant');
    return { items: await deps.state.policies.legalHolds(claims.tenant) };
  });

  app.delete('/v1/legal-holds/:id', async (request, reply) => {
    const { claims } = authorized(request, 'tenant');
    const hold = await deps.state.policies.legalHold(claims.tenant, pathId(request, 'id'));
    if (!hold) throw notFound('legal hold');
    const policyRevision = await deps.policy.submit(claims, 'LegalHoldReleased', { holdId: hold.holdId });
    return reply.code(202).send({ policyRevision });
  });
}
