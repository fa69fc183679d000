import { expect } from 'vitest';
import type { IssueCapabilityRequest, Role } from '@gm/contracts';
import { eventually, memory, type ApiBody, type ApiResponse, type TestRuntime } from '../harness.ts';

/**
 * The people and capabilities of the authorization matrix (authorization-matrix.suite.ts).
 * Every capability carries every action and names the owner's resource and the tenant among
 * its scopes, so that only grants, delegations, revocation and expiry decide — never the
 * capability's ceiling. Grants are made by hand (root administers everything of acme).
 */
export const PERSONAS = [
  'owner', 'sameResource', 'otherResource', 'otherTenant', 'noGrant', 'sameAgent', 'delegate', 'revoked', 'expired',
] as const;
export type Persona = (typeof PERSONAS)[number];

/** Whose operation a row is: Alice's agent (records, jobs), Alice herself (delegations), root (administration). */
export type Owner = 'alice' | 'aliceSelf' | 'root';

export const MAPLE = { kind: 'project', id: 'maple' } as const;
export const BIRCH = { kind: 'project', id: 'birch' } as const;
export const ACME = { kind: 'tenant', id: 'acme' } as const;
const GLOBEX_MAPLE = MAPLE;
const GLOBEX = { kind: 'tenant', id: 'globex' } as const;

const ALL_ACTIONS = ['search', 'read', 'cite', 'write', 'promote', 'review', 'request_delete', 'revoke', 'admin'] as const;
const person = (id: string) => ({ id, kind: 'person' as const });

export interface Fixture {
  rt: TestRuntime;
  /** root: tenant admin of acme and admin of maple and birch (agent `my-agent`). */
  root: string;
  /** Alice's agent `my-agent`: member and reviewer on maple. */
  alice: string;
  /** Alice's own capability (agent `alice`): what may delegate for her. */
  aliceSelf: string;
  /** Carol: member on maple. */
  carol: string;
  /** Bob: member, reviewer and admin on birch only. */
  bob: string;
  /** Gina: tenant admin of globex, member, reviewer and admin of globex's own `maple` (agent `my-agent`). */
  gina: string;
  /** Nora: a capability with every action and no grant at all. */
  nora: string;
  /** Mallory: member on maple, with Alice's agent id `my-agent` (the README's pattern)… */
  mallory: string;
  /** …and with Alice's own agent id `alice`, for the rows Alice herself owns. */
  malloryAsAlice: string;
  /** `assistant` acting for Alice, delegated `search` on birch only. */
  assistant: string;
  /** `root-assistant` acting for root, delegated `search` on birch only. */
  rootAssistant: string;
  revoked: Record<Owner, string>;
  expired: Record<Owner, string>;
  /** A fresh id for this run, readable in a failure. */
  fresh(prefix: string): string;
}

/** The capability a persona calls with, for a row owned by `owner`. */
export function tokenOf(f: Fixture, persona: Persona, owner: Owner): string {
  switch (persona) {
    case 'owner': return f[owner];
    case 'sameResource': return f.carol;
    case 'otherResource': return f.bob;
    case 'otherTenant': return f.gina;
    case 'noGrant': return f.nora;
    case 'sameAgent': return owner === 'aliceSelf' ? f.malloryAsAlice : f.mallory;
    case 'delegate': return owner === 'root' ? f.rootAssistant : f.assistant;
    case 'revoked': return f.revoked[owner];
    case 'expired': return f.expired[owner];
  }
}

export const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti: string; exp: number };

async function created(res: Promise<ApiResponse>): Promise<ApiBody> {
  const answer = await res;
  expect(answer.status, answer.text).toBeLessThan(300);
  return answer.body;
}

/** Builds the fixture: expired capabilities first (time moves once, before anything else), then grants and the rest. */
export async function buildFixture(rt: TestRuntime): Promise<Fixture> {
  const cap = (agentId: string, principal: string, extra: Partial<IssueCapabilityRequest> = {}) =>
    rt.issue({ agentId, principal: person(principal), scopes: [MAPLE, ACME], actions: [...ALL_ACTIONS], ...extra }, { grants: false });
  const rootScopes = { scopes: [MAPLE, BIRCH, ACME] };
  const aliceSelfScopes = { scopes: [MAPLE, BIRCH, ACME] };

  // The expired column: the shortest lifetime the issue API accepts (1 s), waited out once.
  const expired = {
    alice: await cap('my-agent', 'alice', { ttlSeconds: 1 }),
    aliceSelf: await cap('alice', 'alice', { ...aliceSelfScopes, ttlSeconds: 1 }),
    root: await cap('my-agent', 'root', { ...rootScopes, ttlSeconds: 1 }),
  };
  const latestExp = Math.max(...Object.values(expired).map((t) => claimsOf(t).exp)) * 1000;
  await rt.advance(Math.max(0, latestExp - rt.now()) + 50);

  const root = await cap('my-agent', 'root', rootScopes);
  for (const resource of [MAPLE, BIRCH, ACME]) {
    await created(rt.api('POST', '/v1/grants', { token: root, body: { principal: person('root'), resource, role: 'admin', purposes: ['support'] } }));
  }
  const grant = (principal: string, resource: { kind: string; id: string }, role: Role) =>
    created(rt.api('POST', '/v1/grants', { token: root, body: { principal: person(principal), resource, role, purposes: ['support'] } }));
  await grant('alice', MAPLE, 'member');
  await grant('alice', MAPLE, 'reviewer');
  await grant('carol', MAPLE, 'member');
  await grant('mallory', MAPLE, 'member');
  for (const role of ['member', 'reviewer', 'admin'] as const) await grant('bob', BIRCH, role);

  // Globex: its own administrator, of its own resource named like acme's, with acme's agent id.
  const gina = await rt.issue(
    { tenant: 'globex', agentId: 'my-agent', principal: person('gina'), scopes: [GLOBEX_MAPLE, GLOBEX], actions: [...ALL_ACTIONS] }, { grants: false },
  );
  for (const resource of [GLOBEX_MAPLE, GLOBEX]) {
    await created(rt.api('POST', '/v1/grants', { token: gina, body: { principal: person('gina'), resource, role: 'admin', purposes: ['support'] } }));
  }
  for (const role of ['member', 'reviewer'] as const) {
    await created(rt.api('POST', '/v1/grants', { token: gina, body: { principal: person('gina'), resource: GLOBEX_MAPLE, role, purposes: ['support'] } }));
  }

  const aliceSelf = await cap('alice', 'alice', aliceSelfScopes);
  const outside = { resources: [BIRCH], purposes: ['support'], actions: ['search'] };
  await created(rt.api('POST', '/v1/delegations', { token: aliceSelf, body: { agentId: 'assistant', ...outside } }));
  await created(rt.api('POST', '/v1/delegations', { token: root, body: { agentId: 'root-assistant', ...outside } }));

  const revoked = {
    alice: await cap('my-agent', 'alice'),
    aliceSelf: await cap('alice', 'alice', aliceSelfScopes),
    root: await cap('my-agent', 'root', rootScopes),
  };
  for (const token of Object.values(revoked)) {
    await created(rt.api('POST', `/v1/capabilities/${claimsOf(token).jti}/revoke`, { token: root, body: {} }));
  }

  let n = 0;
  return {
    rt, root, aliceSelf, gina, revoked, expired,
    alice: await cap('my-agent', 'alice'),
    carol: await cap('carol-bot', 'carol'),
    bob: await cap('bob-bot', 'bob', { scopes: [MAPLE, BIRCH, ACME] }),
    nora: await cap('nora-bot', 'nora'),
    mallory: await cap('my-agent', 'mallory'),
    malloryAsAlice: await cap('alice', 'mallory'),
    assistant: await cap('assistant', 'alice'),
    rootAssistant: await cap('root-assistant', 'root', rootScopes),
    fresh: (prefix) => `mx-${prefix}-${++n}`,
  };
}

/** Alice's private record (the usual target: nobody else may see it), or another writer's. */
export async function aliceWrites(f: Fixture, id: string, overrides: Record<string, unknown> = {}, token = f.alice): Promise<string> {
  await created(f.rt.api('POST', '/v1/memories', {
    token, body: memory({ id, subjectId: `${id}-subject`, visibility: 'private', content: `Private note ${id} about quokka ledgers`, ...overrides }),
  }));
  return id;
}

/** The record as its owner reads it: still there, with this content and version. */
export async function expectRecord(f: Fixture, id: string, version = 1, content = `Private note ${id} about quokka ledgers`): Promise<void> {
  const res = await f.rt.api('GET', `/v1/memories/${id}`, { token: f.alice });
  expect(res.status, `${id} reads for its owner: ${res.text}`).toBe(200);
  expect(res.body).toMatchObject({ id, version, content });
}

/** A deletion job once it is verified or failed, read with `token`. */
export async function settledJob(f: Fixture, jobId: string, token: string): Promise<ApiBody> {
  return eventually(`job ${jobId} settled`, async () => {
    const res = await f.rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token });
    return res.body.status === 'verified' || res.body.status === 'failed' ? res.body : undefined;
  }, 60_000);
}
