/**
 * The fault suite's principals, granted the way the README's walkthrough grants them: an
 * administrator takes the bootstrap grant on each resource, then makes members. The writer
 * writes to two resources; the reader is a member of one only, so a record of the other in
 * its results is an unauthorized read.
 */
import type { Action } from '@gm/contracts';
import { call, issueCapability, type HttpTarget } from '../administration.ts';
import { PURPOSE } from '../corpus.ts';

export const READABLE = { kind: 'project', id: 'maple' } as const;
export const HIDDEN = { kind: 'project', id: 'oak' } as const;

export interface ChaosRights {
  tenant: string;
  /** write, search, read, request_delete on both resources. */
  writer: () => Promise<string>;
  /** The writer's capability bound to a producer key, for memory.ingest (docs/ingest.md#producer-proofs). */
  ingestWriter: (producerKey: { kty: 'OKP'; crv: 'Ed25519'; x: string }) => Promise<string>;
  /** search and read on the readable resource only. */
  reader: () => Promise<string>;
  /** admin on the tenant: reads every job, revokes any capability. */
  tenantAdmin: () => Promise<string>;
  /** admin on both resources: grants and removes members. */
  resourceAdmin: () => Promise<string>;
  grantMember(agentId: string, resource: { kind: string; id: string }): Promise<void>;
  capability(agentId: string, actions: Action[], scopes: Array<{ kind: string; id: string }>): Promise<{ token: string; jti: string }>;
}

async function grant(target: HttpTarget, adminToken: string, body: Record<string, unknown>): Promise<void> {
  const res = await call(`${target.url}/v1/grants`, adminToken, { purposes: [PURPOSE], ...body }, true);
  if (res.status !== 201) throw new Error(`grant ${JSON.stringify(body)} answered ${res.status}: ${JSON.stringify(res.body)}`);
}

export async function chaosRights(target: HttpTarget, tenant: string): Promise<ChaosRights> {
  const capability = async (agentId: string, actions: Action[], scopes: Array<{ kind: string; id: string }>) =>
    issueCapability(target, { tenant, agentId, actions, scopes });
  const resourceAdmin = async () => (await capability('chaos-admin', ['admin'], [READABLE, HIDDEN])).token;
  const tenantAdmin = async () => (await capability('chaos-tenant-admin', ['admin', 'read'], [{ kind: 'tenant', id: tenant }])).token;
  // The bootstraps: each administrator's own admin grant, taken on the issuer's word.
  const admin = await resourceAdmin();
  for (const resource of [READABLE, HIDDEN]) {
    await grant(target, admin, { principal: { id: 'chaos-admin', kind: 'agent' }, resource, role: 'admin' });
  }
  const tenantScope = { kind: 'tenant', id: tenant };
  await grant(target, await tenantAdmin(), { principal: { id: 'chaos-tenant-admin', kind: 'agent' }, resource: tenantScope, role: 'admin' });
  const grantMember = async (agentId: string, resource: { kind: string; id: string }) =>
    grant(target, await resourceAdmin(), { principal: { id: agentId, kind: 'agent' }, resource, role: 'member' });
  await grantMember('chaos-writer', READABLE);
  await grantMember('chaos-writer', HIDDEN);
  await grantMember('chaos-reader', READABLE);
  return {
    tenant,
    writer: async () => (await capability('chaos-writer', ['write', 'search', 'read', 'request_delete'], [READABLE, HIDDEN])).token,
    ingestWriter: async (producerKey) =>
      (await issueCapability(target, { tenant, agentId: 'chaos-writer', actions: ['write'], scopes: [READABLE, HIDDEN], producerKey })).token,
    reader: async () => (await capability('chaos-reader', ['search', 'read'], [READABLE, HIDDEN])).token,
    tenantAdmin,
    resourceAdmin,
    grantMember,
    capability,
  };
}
