/**
 * How the bench gets its rights: the way the README's walkthrough does it, over the API. The
 * issuer mints an `admin` capability; that administrator first grants *itself* `admin` on the
 * resource — the bootstrap, the one grant taken on the issuer's word (docs/api.md
 * "Administration") — and from then on the Cedar policy decision point lets it grant members.
 * Every bench file gets its capabilities through here (issueToken), none grants on its own.
 */
import { PURPOSE, RESOURCE } from './corpus.ts';
import type { Action, Role } from '@gm/contracts';

/** What an agent sees: every number here is an HTTP round trip against the runtime's API. */
export interface HttpTarget {
  url: string;
  issuerCredential: string;
}

/** The administrator principal: the capability's agent speaks for itself (no `principal` in the issue). */
const ADMIN_AGENT = 'bench-admin';
/** The tenant's administrator (tenant-wide rights), an agent speaking for itself too. */
const TENANT_ADMIN_AGENT = 'bench-tenant-admin';
/** The bench's own agent, the principal of every load. */
const BENCH_AGENT = 'bench';

/**
 * `retry`: a read may be sent once more when the connection fails before any answer. After a
 * long seed the server may close a pooled keep-alive socket just as the client reuses it
 * (ECONNRESET); that is the client pool, not the runtime. Writes are never retried.
 */
export async function call(url: string, token: string, body: unknown, retry = false): Promise<{ status: number; body: unknown }> {
  // No body: a GET (reads by id); otherwise a JSON POST.
  const init: RequestInit = body === undefined
    ? { method: 'GET', headers: { authorization: `Bearer ${token}` } }
    : { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) };
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (err) {
    if (!retry) throw err;
    res = await fetch(url, init);
  }
  const text = await res.text();
  return { status: res.status, body: text.length > 0 ? JSON.parse(text) : null };
}

/** POST /v1/capabilities with the issuer credential: the token and its jti (for revoking it). */
export async function issueCapability(
  target: HttpTarget,
  request: { tenant: string; agentId: string; actions: Action[]; scopes?: Array<{ kind: string; id: string }>; producerKey?: { kty: 'OKP'; crv: 'Ed25519'; x: string } },
): Promise<{ token: string; jti: string }> {
  const res = await call(`${target.url}/v1/capabilities`, target.issuerCredential, { scopes: [{ ...RESOURCE }], purpose: PURPOSE, ...request }, true);
  const issued = res.body as { token?: unknown; jti?: unknown } | null;
  if (res.status !== 201 || typeof issued?.token !== 'string' || typeof issued.jti !== 'string') {
    throw new Error(`capability issue answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  return { token: issued.token, jti: issued.jti };
}

async function addGrant(
  target: HttpTarget, adminToken: string, principalId: string, role: Role, resource: { kind: string; id: string } = { ...RESOURCE },
): Promise<void> {
  const res = await call(`${target.url}/v1/grants`, adminToken, {
    principal: { id: principalId, kind: 'agent' }, resource, role, purposes: [PURPOSE],
  }, true);
  if (res.status !== 201) throw new Error(`grant of ${role} to ${principalId} answered ${res.status}: ${JSON.stringify(res.body)}`);
}

/**
 * Per runtime (its URL and issuer credential) and tenant: the administrator's own admin grant,
 * taken once. A runtime on a fresh data directory has another credential, so another key.
 */
const administered = new Map<string, Promise<void>>();

/**
 * An admin capability of `tenant` whose principal holds an admin grant on the bench resource.
 * The first call per runtime and tenant takes that grant (the bootstrap); every call gets a
 * fresh capability, since capabilities expire and a soak outlives one.
 */
export async function administrator(target: HttpTarget, tenant: string): Promise<string> {
  const { token } = await issueCapability(target, { tenant, agentId: ADMIN_AGENT, actions: ['admin'] });
  const key = JSON.stringify([target.url, target.issuerCredential, tenant]);
  let granted = administered.get(key);
  if (granted === undefined) {
    granted = addGrant(target, token, ADMIN_AGENT, 'admin');
    // A failed bootstrap is not remembered: the next call tries again and reports its own answer.
    granted.catch(() => administered.delete(key));
    administered.set(key, granted);
  }
  await granted;
  return token;
}

/** A capability for the bench agent, whose principal (itself) the administrator first makes a member of the resource. */
export async function issueToken(target: HttpTarget, tenant: string, actions: Action[] = ['write', 'search', 'read']): Promise<string> {
  await addGrant(target, await administrator(target, tenant), BENCH_AGENT, 'member');
  return (await issueCapability(target, { tenant, agentId: BENCH_AGENT, actions })).token;
}

/**
 * An admin capability scoped to `tenant` itself whose principal holds an admin grant on it:
 * tenant-wide administration (revoking another principal's capability, design §6.2 rule 12).
 * The first call per runtime and tenant takes that grant, the tenant's bootstrap.
 */
export async function tenantAdministrator(target: HttpTarget, tenant: string): Promise<string> {
  const scope = { kind: 'tenant', id: tenant };
  const { token } = await issueCapability(target, { tenant, agentId: TENANT_ADMIN_AGENT, actions: ['admin'], scopes: [scope] });
  const key = JSON.stringify([target.url, target.issuerCredential, tenant, 'tenant']);
  let granted = administered.get(key);
  if (granted === undefined) {
    granted = addGrant(target, token, TENANT_ADMIN_AGENT, 'admin', scope);
    granted.catch(() => administered.delete(key));
    administered.set(key, granted);
  }
  await granted;
  return token;
}
