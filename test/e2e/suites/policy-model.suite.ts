import fc from 'fast-check';
import type { ScopeRef } from '@gm/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse, StartRuntime, TestRuntime } from '../harness.ts';
import { STARTUP_MS } from '../harness.ts';

/*
 * A stateful model test of the administration plane (docs/security.md#the-administration-plane).
 *
 * fast-check generates sequences of policy steps — grants (a bootstrap is a first admin grant),
 * removals, delegations and their revocation, a delegate acting, capability revocations, legal
 * holds placed and released — by random principals, in two tenants with the same principal and
 * resource names, through the HTTP API. A small reference model (below, a few lines a rule) says
 * what each step must answer and what it must change. After every step the runtime's policy
 * data must equal the model's, so a refused step changed nothing and an allowed one changed only
 * what it says; every resource that ever had an administrator must still have one (its own, or
 * the tenant's). After every sequence, probes through the API ask each principal what it may do
 * — list legal holds, re-post a grant that is there — so no principal holds a right the model
 * does not give. The attacks this plane met were sequences of individually allowed steps: this
 * is what explores them.
 */

const PRINCIPALS = ['p0', 'p1', 'p2'] as const;
type Principal = (typeof PRINCIPALS)[number];
const RESOURCES = ['r0', 'r1', 'tenant'] as const;
type Res = (typeof RESOURCES)[number];
type Role = 'admin' | 'member';
const PURPOSE = 'support';

interface ModelGrant { id: string; principal: Principal; resource: Res; role: Role }
interface TenantModel {
  grants: ModelGrant[];
  /** Every grant id the API answered in this tenant, present or removed: what a removal may name. */
  knownIds: string[];
  everAdministered: Set<Res>;
  holds: string[];
  knownHolds: string[];
  /** At most one delegation per principal (to its helper agent), so the delegate's rights stay a small rule. */
  delegations: Map<Principal, { id: string; resource: Res; revoked: boolean }>;
}
interface Model { tenants: [TenantModel, TenantModel] }

const emptyTenant = (): TenantModel => ({ grants: [], knownIds: [], everAdministered: new Set(), holds: [], knownHolds: [], delegations: new Map() });

// ---- The rules, as the model states them (design §6.2) ----
const isAdmin = (t: TenantModel, p: Principal, r: Res) => t.grants.some((g) => g.principal === p && g.resource === r && g.role === 'admin');
const isTenantAdmin = (t: TenantModel, p: Principal) => isAdmin(t, p, 'tenant');
/** Who manages a resource's grants: its administrator or the tenant's; the tenant's grants: the tenant's administrator. */
const mayManage = (t: TenantModel, p: Principal, r: Res) => isAdmin(t, p, r) || (r !== 'tenant' && isTenantAdmin(t, p));
const adminsOf = (t: TenantModel, r: Res) => t.grants.filter((g) => g.resource === r && g.role === 'admin');

/** The runtime and what the steps of one sequence share: its two tenants and the capabilities issued so far. */
interface Real {
  rt: TestRuntime;
  tenantIds: [string, string];
  caps: Map<string, string>;
}

const ref = (real: Real, ti: 0 | 1, r: Res): ScopeRef => (r === 'tenant' ? { kind: 'tenant', id: real.tenantIds[ti] } : { kind: 'project', id: r });

/** A principal's own capability (its agent is itself), or its helper's: admin on both resources and the tenant. */
async function capOf(real: Real, ti: 0 | 1, principal: Principal, agent: 'own' | 'helper' = 'own'): Promise<string> {
  const agentId = agent === 'own' ? principal : `helper-${principal}`;
  const key = JSON.stringify([ti, agentId, principal]);
  const cached = real.caps.get(key);
  if (cached !== undefined) return cached;
  const token = await real.rt.issue({
    tenant: real.tenantIds[ti], agentId, principal: { id: principal, kind: 'person' }, purpose: PURPOSE,
    scopes: RESOURCES.map((r) => ref(real, ti, r)), actions: ['admin', 'search', 'read'],
  }, { grants: false });
  real.caps.set(key, token);
  return token;
}

const jtiOf = (token: string): string => (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti: string }).jti;

const answered = (res: ApiResponse, status: number, code?: string) => {
  expect({ status: res.status, ...(code === undefined ? {} : { code: res.body.code }) }, res.text).toEqual({ status, ...(code === undefined ? {} : { code }) });
};

/** Steps run (each ends with `checkState`), for the closing line. */
let stepsChecked = 0;

/** The runtime's policy data of a tenant equals the model's, and every resource ever administered still has an administrator. */
async function checkState(model: Model, real: Real): Promise<void> {
  stepsChecked += 1;
  for (const ti of [0, 1] as const) {
    const t = model.tenants[ti];
    const snapshot = await real.rt.state.policies.snapshot(real.tenantIds[ti]);
    const resOf = (g: { resource: { kind: string; id: string } }): Res => (g.resource.kind === 'tenant' ? 'tenant' : (g.resource.id as Res));
    const actual = snapshot.grants.map((g) => ({ id: g.grantId, principal: g.principal.id, resource: resOf(g), role: g.role })).sort((a, b) => a.id.localeCompare(b.id));
    const expected = [...t.grants].sort((a, b) => a.id.localeCompare(b.id));
    expect(actual, `tenant ${ti}: the grants`).toEqual(expected);
    expect(snapshot.legalHolds.map((h) => h.holdId).sort(), `tenant ${ti}: the legal holds`).toEqual([...t.holds].sort());
    const delegations = Object.fromEntries(snapshot.delegations.map((d) => [d.delegationId, d.revoked]));
    expect(delegations, `tenant ${ti}: the delegations`).toEqual(Object.fromEntries([...t.delegations.values()].map((d) => [d.id, d.revoked])));
    for (const r of t.everAdministered) {
      const administered = actual.some((g) => g.resource === r && g.role === 'admin') || (r !== 'tenant' && actual.some((g) => g.resource === 'tenant' && g.role === 'admin'));
      expect(administered, `tenant ${ti}: ${r} had an administrator and must keep one`).toBe(true);
    }
  }
}

/** Through the API: each principal may list legal holds exactly when the model makes it the tenant's administrator, and manage exactly the grants the model says. */
async function probeRights(model: Model, real: Real): Promise<void> {
  for (const ti of [0, 1] as const) {
    const t = model.tenants[ti];
    for (const p of PRINCIPALS) {
      const token = await capOf(real, ti, p);
      const holds = await real.rt.api('GET', '/v1/legal-holds', { token });
      expect([p, holds.status], `tenant ${ti}: ${p} lists legal holds`).toEqual([p, isTenantAdmin(t, p) ? 200 : 403]);
      for (const r of RESOURCES) {
        const present = t.grants.find((g) => g.resource === r);
        if (present === undefined) continue;
        // Re-posting a grant that is there answers its id and changes nothing — for whoever may manage it.
        const again = await real.rt.api('POST', '/v1/grants', { token, body: grantBody(real, ti, present.principal, r, present.role) });
        expect([p, r, again.status], `tenant ${ti}: ${p} manages ${r}'s grants`).toEqual([p, r, mayManage(t, p, r) ? 201 : 403]);
        if (again.status === 201) expect(again.body.grantId).toBe(present.id);
      }
    }
    // Last, as it may change what it probes: a principal that never held anything asks the
    // issuer's word for admin on each resource without an administrator of its own — granted
    // only where none ever was (the bootstrap happens once per resource, whatever the grant).
    // The tenant comes last: administering it would let the outsider manage the resources.
    for (const r of ['r0', 'r1', 'tenant'] as const) {
      if (adminsOf(t, r).length > 0) continue;
      const token = await capOf(real, ti, 'outsider' as Principal);
      const claim = await real.rt.api('POST', '/v1/grants', { token, body: grantBody(real, ti, 'outsider' as Principal, r, 'admin') });
      expect([r, claim.status], `tenant ${ti}: an outsider bootstraps ${r}`).toEqual([r, t.everAdministered.has(r) ? 403 : 201]);
    }
  }
}

const grantBody = (real: Real, ti: 0 | 1, principal: Principal, r: Res, role: Role) =>
  ({ principal: { id: principal, kind: 'person' }, resource: ref(real, ti, r), role, purposes: [PURPOSE] });

type Step = fc.AsyncCommand<Model, Real>;
/** Mostly one tenant, so that sequences build on their own steps; the other keeps them apart. */
const tenantIndex = fc.oneof({ arbitrary: fc.constant<0 | 1>(0), weight: 4 }, { arbitrary: fc.constant<0 | 1>(1), weight: 1 });
const principal = fc.constantFrom(...PRINCIPALS);
const resource = fc.constantFrom(...RESOURCES);
const projectResource = fc.constantFrom<Res>('r0', 'r1');

class Grant implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly principal: Principal, readonly resource: Res, readonly role: Role) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const role: Role = this.resource === 'tenant' ? 'admin' : this.role;
    const res = await real.rt.api('POST', '/v1/grants', { token: await capOf(real, this.ti, this.actor), body: grantBody(real, this.ti, this.principal, this.resource, role) });
    const identical = t.grants.find((g) => g.principal === this.principal && g.resource === this.resource && g.role === role);
    if (mayManage(t, this.actor, this.resource) || (role === 'admin' && !t.everAdministered.has(this.resource))) {
      answered(res, 201);
      const id = String(res.body.grantId);
      if (identical !== undefined) expect(id).toBe(identical.id);
      else {
        t.grants.push({ id, principal: this.principal, resource: this.resource, role });
        t.knownIds.push(id);
        if (role === 'admin') t.everAdministered.add(this.resource);
      }
    } else {
      answered(res, 403, 'CAP_SCOPE_DENIED');
    }
    await checkState(model, real);
  }
  toString = () => `grant(t${this.ti}, ${this.actor} → ${this.principal} ${this.resource === 'tenant' ? 'admin' : this.role} on ${this.resource})`;
}

class Remove implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly pick: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    // Grants that are there first (a removal that does something), then removed ones and an id never granted.
    const present = t.grants.map((g) => g.id);
    const ids = [...present, ...t.knownIds.filter((id) => !present.includes(id)), '01NEVERGRANTED0000000000AA'];
    const id = ids[this.pick % ids.length] ?? '';
    const res = await real.rt.api('DELETE', `/v1/grants/${id}`, { token: await capOf(real, this.ti, this.actor) });
    const g = t.grants.find((x) => x.id === id);
    if (g === undefined || !mayManage(t, this.actor, g.resource)) {
      answered(res, 404, 'MEM_NOT_FOUND');
    } else if (g.role === 'admin' && adminsOf(t, g.resource).length === 1 && (g.resource === 'tenant' || !isTenantAdmin(t, this.actor))) {
      answered(res, 409, 'MEM_LAST_ADMIN');
    } else {
      answered(res, 202);
      t.grants = t.grants.filter((x) => x.id !== id);
    }
    await checkState(model, real);
  }
  toString = () => `remove(t${this.ti}, ${this.actor}, known grant #${this.pick})`;
}

/**
 * An attacker names a grant id that exists (or existed) with other content: the first step of a
 * takeover when ids were the caller's (move a resource's admin grant away, then bootstrap it
 * again). Grant ids are the server's: the body is refused, whoever sends it, and nothing changes.
 */
class RenameGrant implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly pick: number, readonly resource: Res) {}
  check = (model: Readonly<Model>) => model.tenants[this.ti].knownIds.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const grantId = t.knownIds[this.pick % t.knownIds.length] ?? '';
    const body = { ...grantBody(real, this.ti, this.actor, this.resource, 'admin'), grantId };
    const res = await real.rt.api('POST', '/v1/grants', { token: await capOf(real, this.ti, this.actor), body });
    answered(res, 422, 'MEM_VALIDATION');
    await checkState(model, real);
  }
  toString = () => `rewrite-grant(t${this.ti}, ${this.actor}, known grant #${this.pick} → ${this.actor} admin on ${this.resource})`;
}

class PlaceHold implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const res = await real.rt.api('POST', '/v1/legal-holds', { token: await capOf(real, this.ti, this.actor), body: { subjectId: 'subject-1', reason: 'model test' } });
    if (isTenantAdmin(t, this.actor)) {
      answered(res, 201);
      t.holds.push(String(res.body.holdId));
      t.knownHolds.push(String(res.body.holdId));
    } else {
      answered(res, 403, 'CAP_SCOPE_DENIED');
    }
    await checkState(model, real);
  }
  toString = () => `hold(t${this.ti}, ${this.actor})`;
}

class ReleaseHold implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly pick: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const ids = [...t.knownHolds, 'never-held'];
    const id = ids[this.pick % ids.length] ?? '';
    const res = await real.rt.api('DELETE', `/v1/legal-holds/${id}`, { token: await capOf(real, this.ti, this.actor) });
    if (!isTenantAdmin(t, this.actor)) answered(res, 403, 'CAP_SCOPE_DENIED');
    else if (!t.holds.includes(id)) answered(res, 404, 'MEM_NOT_FOUND');
    else {
      answered(res, 202);
      t.holds = t.holds.filter((h) => h !== id);
    }
    await checkState(model, real);
  }
  toString = () => `release(t${this.ti}, ${this.actor}, known hold #${this.pick})`;
}

class Delegate implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly resource: Res) {}
  check = (model: Readonly<Model>) => !model.tenants[this.ti].delegations.has(this.actor);
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const body = { agentId: `helper-${this.actor}`, resources: [ref(real, this.ti, this.resource)], purposes: [PURPOSE], actions: ['admin', 'search'] };
    const res = await real.rt.api('POST', '/v1/delegations', { token: await capOf(real, this.ti, this.actor), body });
    // A principal's own capability may delegate the actions it carries; what the agent may do is bounded by the principal's grants at each use.
    answered(res, 201);
    t.delegations.set(this.actor, { id: String(res.body.delegationId), resource: this.resource, revoked: false });
    await checkState(model, real);
  }
  toString = () => `delegate(t${this.ti}, ${this.actor} → helper on ${this.resource})`;
}

class RevokeDelegation implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly delegator: Principal) {}
  check = (model: Readonly<Model>) => model.tenants[this.ti].delegations.has(this.delegator);
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const d = t.delegations.get(this.delegator);
    if (d === undefined) throw new Error('checked above');
    const res = await real.rt.api('POST', `/v1/delegations/${d.id}/revoke`, { token: await capOf(real, this.ti, this.actor), body: {} });
    // The delegator itself, or an administrator of the delegated resource (not the tenant's: rule 12 is not delegation).
    if (this.actor === this.delegator || isAdmin(t, this.actor, d.resource)) {
      answered(res, 202);
      d.revoked = true;
    } else {
      answered(res, 404, 'MEM_NOT_FOUND');
    }
    await checkState(model, real);
  }
  toString = () => `revoke-delegation(t${this.ti}, ${this.actor}, ${this.delegator}'s)`;
}

/** The helper agent acting for its principal grants membership: the principal's rights, within the delegation if there is one. */
class DelegateActs implements Step {
  constructor(readonly ti: 0 | 1, readonly principal: Principal, readonly grantee: Principal, readonly resource: Res) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const d = t.delegations.get(this.principal);
    const token = await capOf(real, this.ti, this.principal, 'helper');
    const res = await real.rt.api('POST', '/v1/grants', { token, body: grantBody(real, this.ti, this.grantee, this.resource, 'member') });
    // No delegation record: the issuer vouched for the pair and the agent has the principal's rights (rule 8);
    // a delegation bounds it to its resource and never reaches the tenant's rights (rule 12); a revoked one denies all.
    const allowed = d === undefined ? mayManage(t, this.principal, this.resource) : !d.revoked && d.resource === this.resource && isAdmin(t, this.principal, this.resource);
    if (allowed) {
      answered(res, 201);
      const identical = t.grants.find((g) => g.principal === this.grantee && g.resource === this.resource && g.role === 'member');
      const id = String(res.body.grantId);
      if (identical !== undefined) expect(id).toBe(identical.id);
      else {
        t.grants.push({ id, principal: this.grantee, resource: this.resource, role: 'member' });
        t.knownIds.push(id);
      }
    } else {
      expect([401, 403], res.text).toContain(res.status);
    }
    await checkState(model, real);
  }
  toString = () => `helper-of-${this.principal}-grants(t${this.ti}, member ${this.grantee} on ${this.resource})`;
}

class RevokeCapability implements Step {
  constructor(readonly ti: 0 | 1, readonly actor: Principal, readonly target: Principal) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const t = model.tenants[this.ti];
    const victim = await capOf(real, this.ti, this.target);
    const res = await real.rt.api('POST', `/v1/capabilities/${jtiOf(victim)}/revoke`, { token: await capOf(real, this.ti, this.actor), body: {} });
    if (this.actor === this.target || isTenantAdmin(t, this.actor)) {
      answered(res, 202);
      answered(await real.rt.api('GET', '/v1/legal-holds', { token: victim }), 401, 'CAP_REVOKED');
      real.caps.delete(JSON.stringify([this.ti, this.target, this.target]));
    } else {
      answered(res, 403, 'CAP_SCOPE_DENIED');
      expect((await real.rt.api('GET', '/v1/legal-holds', { token: victim })).status).not.toBe(401);
    }
    await checkState(model, real);
  }
  toString = () => `revoke-capability(t${this.ti}, ${this.actor}, ${this.target}'s)`;
}

const role = fc.oneof({ arbitrary: fc.constant<Role>('admin'), weight: 2 }, { arbitrary: fc.constant<Role>('member'), weight: 1 });
const grantStep = fc.tuple(tenantIndex, principal, principal, resource, role).map(([ti, a, p, r, ro]) => new Grant(ti, a, p, r, ro));
const removeStep = fc.tuple(tenantIndex, principal, fc.nat(6)).map(([ti, a, n]) => new Remove(ti, a, n));
/** Grants and removals are most of what moves administration: listed thrice and twice, they come up as often. */
const steps = [
  grantStep, grantStep, grantStep,
  removeStep, removeStep,
  fc.tuple(tenantIndex, principal, fc.nat(16), resource).map(([ti, a, n, r]) => new RenameGrant(ti, a, n, r)),
  fc.tuple(tenantIndex, principal).map(([ti, a]) => new PlaceHold(ti, a)),
  fc.tuple(tenantIndex, principal, fc.nat(8)).map(([ti, a, n]) => new ReleaseHold(ti, a, n)),
  fc.tuple(tenantIndex, principal, projectResource).map(([ti, a, r]) => new Delegate(ti, a, r)),
  fc.tuple(tenantIndex, principal, principal).map(([ti, a, d]) => new RevokeDelegation(ti, a, d)),
  fc.tuple(tenantIndex, principal, principal, projectResource).map(([ti, p, g, r]) => new DelegateActs(ti, p, g, r)),
  fc.tuple(tenantIndex, principal, principal).map(([ti, a, v]) => new RevokeCapability(ti, a, v)),
];

/**
 * `runs`: how many sequences (each of up to `maxSteps` steps) to run; GM_POLICY_MODEL_RUNS
 * overrides it and GM_POLICY_MODEL_SEED replays a failure's seed.
 */
export const policyModelSuite = (start: StartRuntime, options: { runs: number; maxSteps: number }) =>
  describe('the administration plane against its reference model (random sequences of policy steps)', () => {
    let rt: TestRuntime;
    beforeAll(async () => {
      // Thousands of capabilities and policy changes a minute: the rate limit is not what is tested here.
      rt = await start({ MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' });
    }, STARTUP_MS);
    afterAll(async () => rt?.close());

    it('answers every step as the model does, changes nothing on a refusal, and never gives a right the model does not', async () => {
      const runs = Number(process.env.GM_POLICY_MODEL_RUNS ?? options.runs);
      const seed = process.env.GM_POLICY_MODEL_SEED === undefined ? Date.now() ^ (Math.random() * 0x7fffffff) : Number(process.env.GM_POLICY_MODEL_SEED);
      let sequence = 0;
      stepsChecked = 0;
      const started = performance.now();
      const property = fc.asyncProperty(fc.commands(steps, { maxCommands: options.maxSteps, size: 'max' }), async (commands) => {
        sequence += 1;
        const run = `pm${seed.toString(36)}-${sequence}`;
        const real: Real = { rt, tenantIds: [`${run}-a`, `${run}-b`], caps: new Map() };
        const model: Model = { tenants: [emptyTenant(), emptyTenant()] };
        await fc.asyncModelRun(() => ({ model, real }), commands);
        await probeRights(model, real);
      });
      const details = await fc.check(property, { numRuns: runs, seed });
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      process.stdout.write(`policy model (${rt.kind}): ${details.numRuns} sequences, ${stepsChecked} steps checked, seed ${seed}, ${seconds} s\n`);
      if (details.failed) throw new Error(`the administration plane left its model (seed ${seed}, replay with GM_POLICY_MODEL_SEED=${seed}):\n${fc.defaultReportMessage(details)}\n${String(details.errorInstance)}`);
      expect(details.numRuns).toBe(runs);
    }, 600_000);
  });
