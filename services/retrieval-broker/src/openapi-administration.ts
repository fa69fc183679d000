import {
  BODY_INVALID, CAPABILITY, ID_TAKEN, IMPERSONATION, POLICY_TIMEOUT, SCOPE, GRANT_RACED, LAST_ADMIN, NOT_ADMIN, capability, notFound,
} from './openapi-failures.ts';
import { type Operation, SERVED, adminOnly, answer, link, pathId, policyChange } from './openapi-builders.ts';

/** The administration operations of the OpenAPI document (design §6.2): grants, delegations, revocations, legal holds. */
export const ADMINISTRATION_PATHS: Record<string, Partial<Record<'get' | 'post' | 'delete', Operation>>> = {
  '/v1/grants': {
    post: {
      operationId: 'addGrant', tag: 'administration', summary: 'Add a grant (its resource in the capability\'s scopes)',
      body: { schema: 'AddGrantRequest', required: true, examples: ['grantRequest'] },
      responses: policyChange('201', 'GrantCreatedResponse', 'added, with an id the server assigns; a grant identical to one that is there answers that grant\'s id and changes nothing (grants are never rewritten)', { remove: link('removeGrant', 'id', 'grantId', 'remove it') }),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, adminOnly, SCOPE, NOT_ADMIN, GRANT_RACED, POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/grants/{id}': {
    delete: {
      operationId: 'removeGrant', tag: 'administration', summary: 'Remove a grant',
      parameters: [pathId('id', 'the grantId')],
      responses: policyChange('202', 'PolicyRevisionResponse', 'removed'),
      failures: [...capability('admin'), notFound('no grant with this id that the caller may manage (admin on its resource or on the tenant, the resource in scope): unknown and unmanaged ids alike'), LAST_ADMIN, POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/delegations': {
    post: {
      operationId: 'addDelegation', tag: 'administration', summary: 'Delegate to an agent (the delegator is the capability\'s principal)',
      body: { schema: 'AddDelegationRequest', required: true },
      responses: policyChange('201', 'DelegationCreatedResponse', 'delegated', { revoke: link('revokeDelegation', 'id', 'delegationId', 'revoke it') }),
      failures: [
        ...CAPABILITY, BODY_INVALID, IMPERSONATION, { ...IMPERSONATION, when: 'the body names another delegator than the capability\'s principal' },
        { ...SCOPE, when: 'a delegated resource is outside the capability\'s scopes' },
        { ...adminOnly, when: 'without "admin": a delegated agent cannot delegate further, and a principal delegates only actions its capability grants' },
        ID_TAKEN('delegation'), POLICY_TIMEOUT, ...SERVED,
      ],
    },
  },
  '/v1/delegations/{id}/revoke': {
    post: {
      operationId: 'revokeDelegation', tag: 'administration', summary: 'Revoke a delegation',
      parameters: [pathId('id', 'the delegationId')],
      body: { schema: 'PolicyActionRequest', required: false, description: 'none, or `{tenant}` to have it checked' },
      responses: policyChange('202', 'PolicyRevisionResponse', 'revoked'),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, notFound('no delegation with this id this capability may revoke (it is neither the delegator nor an admin of all its resources)'), POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/capabilities/{jti}/revoke': {
    post: {
      operationId: 'revokeCapability', tag: 'administration', summary: 'Revoke a capability until it expires; an unknown, expired or other tenant\'s jti answers the same 202',
      parameters: [pathId('jti', 'the capability\'s jti')],
      body: { schema: 'PolicyActionRequest', required: false, description: 'none, or `{tenant}` to have it checked' },
      responses: policyChange('202', 'PolicyRevisionResponse', 'revoked (or nothing to revoke)'),
      failures: [
        ...CAPABILITY, BODY_INVALID, IMPERSONATION, notFound('the jti is not an id'),
        { ...adminOnly, when: 'another principal\'s capability (or an unknown jti), and this one does not grant "admin"' },
        { ...NOT_ADMIN, when: 'another principal\'s capability (or an unknown jti), and no admin grant on the tenant applies' }, POLICY_TIMEOUT, ...SERVED,
      ],
    },
  },
  '/v1/agents/{id}/revoke': {
    post: {
      operationId: 'revokeAgent', tag: 'administration', summary: 'Revoke an agent',
      parameters: [pathId('id', 'the agentId')],
      body: { schema: 'PolicyActionRequest', required: false, description: 'none, or `{tenant}` to have it checked' },
      responses: policyChange('202', 'PolicyRevisionResponse', 'revoked'),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, adminOnly, NOT_ADMIN, notFound('the agent id is not an id'), POLICY_TIMEOUT, ...SERVED],
    },
  },
  '/v1/legal-holds': {
    post: {
      operationId: 'placeLegalHold', tag: 'administration', summary: 'Place a legal hold on a subject',
      body: { schema: 'PlaceLegalHoldRequest', required: true, examples: ['legalHoldRequest'] },
      responses: policyChange('201', 'LegalHoldCreatedResponse', 'placed', { release: link('releaseLegalHold', 'id', 'holdId', 'release it') }),
      failures: [...CAPABILITY, BODY_INVALID, IMPERSONATION, adminOnly, NOT_ADMIN, ID_TAKEN('legal hold'), POLICY_TIMEOUT, ...SERVED],
    },
    get: {
      operationId: 'listLegalHolds', tag: 'administration', summary: 'Legal holds of the tenant',
      responses: answer('200', { schema: 'LegalHolds', description: 'the holds' }),
      failures: [...capability('admin'), NOT_ADMIN, ...SERVED],
    },
  },
  '/v1/legal-holds/{id}': {
    delete: {
      operationId: 'releaseLegalHold', tag: 'administration', summary: 'Release a legal hold',
      parameters: [pathId('id', 'the holdId')],
      responses: policyChange('202', 'PolicyRevisionResponse', 'released'),
      failures: [...capability('admin'), NOT_ADMIN, notFound('no legal hold with this id in the tenant'), POLICY_TIMEOUT, ...SERVED],
    },
  },
};
