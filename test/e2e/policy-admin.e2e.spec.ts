import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '@gm/contracts';
import { loadConfig, replayDataDir } from '@gm/embedded';
import { configuredGrantId } from '@gm/retrieval-broker';
import { eventually, memory, startTestRuntime, type EmbeddedTestRuntime } from './harness.ts';

/**
 * Administration over the HTTP API of the embedded runtime (§6.2): grants, delegations,
 * capability and agent revocation, legal holds — each a policy.changes message applied by the
 * policy projector before the API answers, so the very next request sees it (§7).
 */
describe('policy administration over the API', () => {
  let rt: EmbeddedTestRuntime;
  let admin: string;
  const maple = { kind: 'project', id: 'maple' } as const;

  const jtiOf = (token: string): string => {
    const payload = token.split('.')[1] ?? '';
    return (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { jti: string }).jti;
  };
  const revision = () => rt.state.policyRevisions.current('acme');
  const policyLogEnd = async () => (await rt.runtime.bus.endOffsets(TOPICS.policyChanges)).reduce((a, b) => a + b, 0);
  const readStatus = async (token: string) => (await rt.api('GET', '/v1/memories/adm-1', { token })).status;

  beforeAll(async () => {
    rt = await startTestRuntime();
    admin = await rt.issue({
      agentId: 'admin-desk', principal: { id: 'carol', kind: 'person' }, scopes: [maple, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'revoke', 'search', 'read', 'cite'],
    });
    const writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'adm-1', content: 'Customer 42 pays by invoice' }) })).status).toBe(201);
  });
  afterAll(async () => rt.close());

  it('adds and removes a grant; ids are the server\'s, an identical grant answers its id, and each answer carries the revision it produced', async () => {
    const before = await revision();
    const body = { principal: { id: 'erin', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'] };
    const added = await rt.api('POST', '/v1/grants', { token: admin, body });
    expect(added.status).toBe(201);
    const grantId = String(added.body.grantId);
    expect(grantId).toMatch(/^[0-9A-Z]{26}$/);
    expect(added.body).toEqual({ grantId, policyRevision: before + 1 });
    expect((await rt.state.policies.snapshot('acme')).grants.map((g) => g.grantId)).toContain(grantId);
    // The same grant again (purposes in another order too): its id, and nothing changes.
    const end = await policyLogEnd();
    const again = await rt.api('POST', '/v1/grants', { token: admin, body: { ...body, purposes: ['support', 'support'] } });
    expect([again.status, again.body]).toEqual([201, { grantId, policyRevision: before + 1 }]);
    expect(await policyLogEnd()).toBe(end);
    // A grant id is not the caller's to choose: naming one is refused, not reinterpreted.
    const named = await rt.api('POST', '/v1/grants', { token: admin, body: { ...body, grantId: 'g-erin' } });
    expect([named.status, named.body.code]).toEqual([422, 'MEM_VALIDATION']);

    // Posts of one grant racing each other: one grant, and every answer names it.
    const racing = { ...body, principal: { id: 'frank', kind: 'person' } };
    const raced = await Promise.all([1, 2, 3].map(() => rt.api('POST', '/v1/grants', { token: admin, body: racing })));
    expect(raced.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(new Set(raced.map((r) => r.body.grantId)).size).toBe(1);
    expect((await rt.state.policies.grants('acme')).filter((g) => g.principal.id === 'frank').map((g) => g.grantId)).toEqual([raced[0]?.body.grantId]);

    const other = await rt.api('POST', '/v1/grants', {
      token: admin, body: { principal: { id: 'dave', kind: 'person' }, resource: maple, role: 'reviewer', purposes: ['support'] },
    });
    expect(other.status).toBe(201);
    expect(other.body.grantId).not.toBe(grantId);

    const removed = await rt.api('DELETE', `/v1/grants/${grantId}`, { token: admin });
    expect(removed.status).toBe(202);
    expect(removed.body).toEqual({ policyRevision: before + 4 });
    expect(await rt.state.policies.grant('acme', grantId)).toBeNull();
    expect((await rt.api('DELETE', `/v1/grants/${grantId}`, { token: admin })).status).toBe(404);
  });

  it('decides administration with Cedar: an admin capability without an admin grant changes nothing, past the bootstrap', async () => {
    const oak = { kind: 'project', id: 'oak' } as const;
    // An "admin" capability straight from the issuer, for a principal with no admin grant.
    const stranger = await rt.issue({ agentId: 'rogue-desk', principal: { id: 'mallory', kind: 'person' }, scopes: [maple, oak], actions: ['admin', 'revoke'] }, { grants: false });
    const end = await policyLogEnd();
    const grant = { principal: { id: 'mallory', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'] };
    for (const [method, route, body] of [
      ['POST', '/v1/grants', grant],
      // maple has an administrator (carol): its first admin grant is long given, so no bootstrap.
      ['POST', '/v1/grants', { ...grant, role: 'admin' }],
      ['POST', '/v1/agents/support-bot/revoke', {}],
      ['POST', '/v1/legal-holds', { subjectId: 'cust-42', reason: 'r' }],
      ['GET', '/v1/legal-holds', undefined],
    ] as const) {
      const res = await rt.api(method, route, { token: stranger, ...(body === undefined ? {} : { body }) });
      expect([route, res.status, res.body.code]).toEqual([route, 403, 'CAP_SCOPE_DENIED']);
    }
    expect(await policyLogEnd()).toBe(end);
    // Delegations: beyond its own actions, or someone else's, only an administrator (Cedar) may.
    const delegation = { agentId: 'helper-2', resources: [maple], purposes: ['support'], actions: ['search'] };
    expect((await rt.api('POST', '/v1/delegations', { token: stranger, body: delegation })).body.code).toBe('CAP_ACTION_DENIED');
    expect((await rt.api('POST', '/v1/delegations', { token: admin, body: { ...delegation, delegationId: 'd-cedar' } })).status).toBe(201);
    expect((await rt.api('POST', '/v1/delegations/d-cedar/revoke', { token: stranger, body: {} })).status).toBe(404);
    expect((await rt.api('POST', '/v1/delegations/d-cedar/revoke', { token: admin, body: {} })).status).toBe(202);
    // Nor can it see another requester's deletion job (an administrator could).
    const writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'adm-job', subjectId: 'cust-adm', content: 'A record to delete' }) })).status).toBe(201);
    const deleted = await rt.api('DELETE', '/v1/memories/adm-job', { token: writer });
    const job = String(deleted.body.jobId);
    // The job is the deletion-orchestrator's to create: the DELETE's consistency token makes each
    // read wait for it, so the stranger's 404 is a refusal, not a job not made yet.
    const afterDelete = { 'consistency-token': String(deleted.headers.get('consistency-token')) };
    expect((await rt.api('GET', `/v1/deletion-jobs/${job}`, { token: stranger, headers: afterDelete })).status).toBe(404);
    expect((await rt.api('GET', `/v1/deletion-jobs/${job}`, { token: admin, headers: afterDelete })).status).toBe(200);

    // The bootstrap: oak has no administrator yet, so its first admin grant is taken on the issuer's word…
    const first = await rt.api('POST', '/v1/grants', { token: stranger, body: { ...grant, resource: oak, role: 'admin' } });
    expect(first.status, first.text).toBe(201);
    const malloryOak = String(first.body.grantId);
    expect(rt.logs.lines.some((l) => l.includes('admin bootstrap') && l.includes(malloryOak))).toBe(true);
    // …and from then on Cedar decides on it: mallory administers oak, for its purpose only, and not maple.
    expect((await rt.api('POST', '/v1/grants', { token: stranger, body: { ...grant, resource: oak } })).status).toBe(201);
    expect((await rt.api('POST', '/v1/grants', { token: stranger, body: grant })).status).toBe(403);
    const otherPurpose = await rt.issue({ agentId: 'rogue-desk', principal: { id: 'mallory', kind: 'person' }, scopes: [oak], purpose: 'billing', actions: ['admin'] }, { grants: false });
    expect((await rt.api('POST', '/v1/grants', { token: otherPurpose, body: { ...grant, resource: oak } })).body.code).toBe('CAP_SCOPE_DENIED');
    // A second issuer-vouched stranger gets no bootstrap on oak: it has an administrator now.
    const second = await rt.issue({ agentId: 'other-desk', principal: { id: 'trent', kind: 'person' }, scopes: [oak], actions: ['admin'] }, { grants: false });
    expect((await rt.api('POST', '/v1/grants', { token: second, body: { ...grant, principal: { id: 'trent', kind: 'person' }, resource: oak, role: 'admin' } })).status).toBe(403);
    // oak's last administrator's grant is not its holder's to remove: only the tenant's administrator's.
    const last = await rt.api('DELETE', `/v1/grants/${malloryOak}`, { token: stranger });
    expect([last.status, last.body.code]).toEqual([409, 'MEM_LAST_ADMIN']);
    // Removing it (carol administers the tenant) takes the right away at the next request.
    const tenantAdmin = await rt.issue({ agentId: 'admin-desk', principal: { id: 'carol', kind: 'person' }, scopes: [oak, { kind: 'tenant', id: 'acme' }], actions: ['admin'] }, { grants: false });
    expect((await rt.api('DELETE', `/v1/grants/${malloryOak}`, { token: tenantAdmin })).status).toBe(202);
    expect((await rt.api('POST', '/v1/grants', { token: stranger, body: { ...grant, resource: oak } })).status).toBe(403);
    // …and oak, administered once, is never bootstrapped again on the issuer's word, by anyone.
    const again = await rt.api('POST', '/v1/grants', { token: stranger, body: { ...grant, resource: oak, role: 'admin' } });
    expect([again.status, again.body.code]).toEqual([403, 'CAP_SCOPE_DENIED']);
  });

  it('the takeover sequence fails at every step: no grant is moved, removed without admin on it, or bootstrapped again, and grant ids cannot be probed', async () => {
    const acme = { kind: 'tenant', id: 'acme' } as const;
    const [ash, birch] = [{ kind: 'project', id: 'ash' } as const, { kind: 'project', id: 'birch' } as const];
    const person = (id: string) => ({ id, kind: 'person' as const });
    // victor administers birch, and vera the tenant (its first administrator in this runtime is carol); eve administers ash.
    const victor = await rt.issue({ agentId: 'victor-desk', principal: person('victor'), scopes: [birch], actions: ['admin'] }, { grants: false });
    const victorGrant = await rt.api('POST', '/v1/grants', { token: victor, body: { principal: person('victor'), resource: birch, role: 'admin', purposes: ['support'] } });
    expect(victorGrant.status).toBe(201);
    const carol = await rt.issue({ agentId: 'admin-desk', principal: person('carol'), scopes: [acme], actions: ['admin'] }, { grants: false });
    const tenantGrant = await rt.api('POST', '/v1/grants', { token: carol, body: { principal: person('vera'), resource: acme, role: 'admin', purposes: ['support'] } });
    expect(tenantGrant.status).toBe(201);
    const eve = await rt.issue({ agentId: 'eve-desk', principal: person('eve'), scopes: [ash, birch, acme], actions: ['admin'] }, { grants: false });
    expect((await rt.api('POST', '/v1/grants', { token: eve, body: { principal: person('eve'), resource: ash, role: 'admin', purposes: ['support'] } })).status).toBe(201);
    const hold = await rt.api('POST', '/v1/legal-holds', { token: carol, body: { subjectId: 'cust-takeover', reason: 'Wombat v. Acme' } });
    expect(hold.status).toBe(201);
    const before = await rt.state.policies.snapshot('acme');

    // Step 1: re-post birch's (and the tenant's) admin grant id onto ash, which eve administers: refused, nothing moves.
    for (const grantId of [String(victorGrant.body.grantId), String(tenantGrant.body.grantId)]) {
      const moved = await rt.api('POST', '/v1/grants', { token: eve, body: { grantId, principal: person('eve'), resource: ash, role: 'admin', purposes: ['support'] } });
      expect([moved.status, moved.body.code]).toEqual([422, 'MEM_VALIDATION']);
    }
    // Step 1 alone: removing birch's grant, in eve's scopes but not hers to manage, answers as an unknown id does.
    const removal = await rt.api('DELETE', `/v1/grants/${String(victorGrant.body.grantId)}`, { token: eve });
    const unknown = await rt.api('DELETE', '/v1/grants/01NEVERGRANTED0000000000AA', { token: eve });
    expect([removal.status, removal.body.code, removal.body.detail]).toEqual([unknown.status, unknown.body.code, unknown.body.detail]);
    expect(removal.status).toBe(404);
    // Step 2: birch and the tenant had administrators, so no bootstrap on the issuer's word, for any grant.
    for (const resource of [birch, acme]) {
      const bootstrap = await rt.api('POST', '/v1/grants', { token: eve, body: { principal: person('eve'), resource, role: 'admin', purposes: ['support'] } });
      expect([bootstrap.status, bootstrap.body.code]).toEqual([403, 'CAP_SCOPE_DENIED']);
    }
    // And so no hold's reason to read, and no hold to release.
    expect((await rt.api('GET', '/v1/legal-holds', { token: eve })).status).toBe(403);
    expect((await rt.api('DELETE', `/v1/legal-holds/${String(hold.body.holdId)}`, { token: eve })).status).toBe(403);
    expect(await rt.state.policies.snapshot('acme')).toEqual(before);
    // The real administrators keep administering.
    expect((await rt.api('POST', '/v1/grants', { token: victor, body: { principal: person('walt'), resource: birch, role: 'member', purposes: ['support'] } })).status).toBe(201);
    expect((await rt.api('DELETE', `/v1/legal-holds/${String(hold.body.holdId)}`, { token: carol })).status).toBe(202);
  });

  it('bootstraps a resource once: of two concurrent first admin grants exactly one succeeds, and a made-up resource makes no tenant administrator', async () => {
    const elm = { kind: 'project', id: 'elm' } as const;
    const acme = { kind: 'tenant', id: 'acme' } as const;
    const [one, two] = await Promise.all(['mallory', 'trent'].map((id) => rt.issue({ agentId: `${id}-desk`, principal: { id, kind: 'person' }, scopes: [elm, acme], actions: ['admin'] }, { grants: false })));
    const first = (token: string | undefined, id: string) =>
      rt.api('POST', '/v1/grants', { token, body: { principal: { id, kind: 'person' }, resource: elm, role: 'admin', purposes: ['support'] } });
    const answers = await Promise.all([first(one, 'mallory'), first(two, 'trent')]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 403]);
    const admins = (await rt.state.policies.snapshot('acme')).grants.filter((g) => g.resource.id === 'elm' && g.role === 'admin');
    expect(admins).toHaveLength(1);
    // The winner administers elm, and nothing tenant-wide: holds, agents and others' jobs stay closed to it.
    const winner = answers[0]?.status === 201 ? one : two;
    const hold = await rt.api('POST', '/v1/legal-holds', { token: winner, body: { subjectId: 'cust-42', reason: 'r' } });
    expect([hold.status, hold.body.code]).toEqual([403, 'CAP_SCOPE_DENIED']);
  });

  it('MEMORY_BOOTSTRAP_ADMINS grants administrators at start; with MEMORY_ADMIN_BOOTSTRAP=configured the issuer\'s word adds none', async () => {
    const admins = [{ tenant: 'acme', principal: { id: 'root', kind: 'person' }, resource: maple, purposes: ['support'] }];
    const configured = await startTestRuntime({ MEMORY_ADMIN_BOOTSTRAP: 'configured', MEMORY_BOOTSTRAP_ADMINS: JSON.stringify(admins) });
    try {
      // Produced at start; the policy projector applies it.
      const configuredId = configuredGrantId({ tenant: 'acme', principal: { id: 'root', kind: 'person' }, resource: maple, role: 'admin', purposes: ['support'], restricted: [] });
      await eventually('the bootstrap admin grant applied', async () => (await configured.state.policies.grant('acme', configuredId)) ?? undefined);
      const root = await configured.issue({ agentId: 'ops-desk', principal: { id: 'root', kind: 'person' }, actions: ['admin'] }, { grants: false });
      const member = { principal: { id: 'alice', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'] };
      expect((await configured.api('POST', '/v1/grants', { token: root, body: member })).status).toBe(201);
      // No first admin grant on the issuer's word: oak stays without an administrator.
      const oak = { kind: 'project', id: 'oak' } as const;
      const stranger = await configured.issue({ agentId: 'rogue-desk', principal: { id: 'mallory', kind: 'person' }, scopes: [oak], actions: ['admin'] }, { grants: false });
      const claim = await configured.api('POST', '/v1/grants', { token: stranger, body: { ...member, principal: { id: 'mallory', kind: 'person' }, resource: oak, role: 'admin' } });
      expect([claim.status, claim.body.code]).toEqual([403, 'CAP_SCOPE_DENIED']);
      // A restart produces nothing more: the grant is there as configured.
      const before = await configured.state.policyRevisions.current('acme');
      await configured.restart();
      expect(await configured.state.policyRevisions.current('acme')).toBe(before);
      // A grant once moved under the id the configuration used to name (as ids were the caller's,
      // a rewrite could): the next start checks configured grants by their whole content and removes it.
      const legacyId = 'bootstrap.root.project.maple';
      const moved = { grantId: legacyId, tenant: 'acme', principal: { id: 'mallory', kind: 'person' }, resource: maple, role: 'admin', purposes: ['support'], restricted: [] };
      await configured.runtime.bus.produce([{ topic: TOPICS.policyChanges, key: 'acme', value: {
        type: 'GrantAdded', data: { grant: moved },
        metadata: { changeId: 'legacy-move', tenant: 'acme', requestedBy: { agentId: 'eve-desk', principalId: 'eve' }, occurredAt: new Date(configured.now()).toISOString() },
      } }]);
      await eventually('the moved grant applied', async () => (await configured.state.policies.grant('acme', legacyId)) ?? undefined);
      await configured.restart();
      await eventually('the moved grant removed at start', async () => ((await configured.state.policies.grant('acme', legacyId)) === null ? true : undefined));
      expect((await configured.state.policies.grant('acme', configuredId))?.principal.id).toBe('root');
    } finally {
      await configured.close();
    }
    // A bootstrap list that does not parse stops the start, naming the variable.
    expect(() => loadConfig({ MEMORY_BOOTSTRAP_ADMINS: '[{"tenant":"acme","principal":"root"}]' })).toThrow(/MEMORY_BOOTSTRAP_ADMINS/);
  });

  it('rejects unknown fields (422), another tenant (403) and missing rights (403), producing nothing', async () => {
    const plain = await rt.issue({ agentId: 'plain-bot' });
    const end = await policyLogEnd();
    const grant = { principal: { id: 'alice', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'] };
    const unknown = await rt.api('POST', '/v1/grants', { token: admin, body: { ...grant, sneaky: true } });
    expect(unknown.status).toBe(422);
    expect(unknown.contentType).toContain('application/problem+json');
    expect(unknown.body.code).toBe('MEM_VALIDATION');
    const otherTenant = await rt.api('POST', '/v1/grants', { token: admin, body: { ...grant, tenant: 'globex' } });
    expect([otherTenant.status, otherTenant.body.code]).toEqual([403, 'MEM_IMPERSONATION']);
    const outOfScope = await rt.api('POST', '/v1/grants', { token: admin, body: { ...grant, resource: { kind: 'project', id: 'oak' } } });
    expect([outOfScope.status, outOfScope.body.code]).toEqual([403, 'CAP_SCOPE_DENIED']);
    for (const [method, route, body] of [
      ['POST', '/v1/grants', grant], ['POST', '/v1/agents/x/revoke', {}], ['POST', '/v1/legal-holds', { subjectId: 's', reason: 'r' }],
    ] as const) {
      const res = await rt.api(method, route, { token: plain, body });
      expect([route, res.status, res.body.code]).toEqual([route, 403, 'CAP_ACTION_DENIED']);
    }
    const hold = await rt.api('POST', '/v1/legal-holds', { token: admin, body: { subjectId: 's', reason: 'r', extra: 1 } });
    expect(hold.status).toBe(422);
    const revoke = await rt.api('POST', '/v1/agents/x/revoke', { token: admin, body: { tenant: 'globex' } });
    expect(revoke.status).toBe(403);
    expect(await policyLogEnd()).toBe(end);
  });

  it('a revoked capability is denied on the very next request; others of the agent keep working', async () => {
    const victim = await rt.issue({ agentId: 'reader-bot' });
    const sibling = await rt.issue({ agentId: 'reader-bot' });
    expect(await readStatus(victim)).toBe(200);
    const res = await rt.api('POST', `/v1/capabilities/${jtiOf(victim)}/revoke`, { token: admin, body: {} });
    expect(res.status).toBe(202);
    const denied = await rt.api('GET', '/v1/memories/adm-1', { token: victim });
    expect([denied.status, denied.body.code]).toEqual([401, 'CAP_REVOKED']);
    expect(await readStatus(sibling)).toBe(200);
  });

  it('lets a caller revoke its own capability without the revoke action; an unknown or foreign jti is a no-op 202', async () => {
    const self = await rt.issue({ agentId: 'self-bot' });
    const selfAgain = await rt.issue({ agentId: 'self-bot' });
    const other = await rt.issue({ agentId: 'other-bot' });
    expect((await rt.api('POST', `/v1/capabilities/${jtiOf(other)}/revoke`, { token: self })).body.code).toBe('CAP_ACTION_DENIED');
    expect((await rt.api('POST', `/v1/capabilities/${jtiOf(selfAgain)}/revoke`, { token: self })).status).toBe(202);
    expect(await readStatus(selfAgain)).toBe(401);
    expect((await rt.api('POST', `/v1/capabilities/${jtiOf(self)}/revoke`, { token: self })).status).toBe(202);
    expect(await readStatus(self)).toBe(401);

    const foreign = await rt.issue({ agentId: 'their-bot', tenant: 'globex', scopes: [maple] });
    const rev = await revision();
    const end = await policyLogEnd();
    for (const jti of [jtiOf(foreign), 'never-issued-0000']) {
      const res = await rt.api('POST', `/v1/capabilities/${jti}/revoke`, { token: admin });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ policyRevision: rev });
    }
    expect(await policyLogEnd()).toBe(end);
    expect((await rt.api('POST', '/v1/search', { token: foreign, body: { query: 'x' } })).status).toBe(200);
  });

  it('a revoked agent is denied with every capability on the next request, in its tenant only', async () => {
    const one = await rt.issue({ agentId: 'rogue-bot' });
    const two = await rt.issue({ agentId: 'rogue-bot', purpose: 'engineering' });
    const elsewhere = await rt.issue({ agentId: 'rogue-bot', tenant: 'globex' });
    expect((await rt.api('POST', '/v1/agents/rogue-bot/revoke', { token: admin, body: {} })).status).toBe(202);
    expect(await readStatus(one)).toBe(401);
    expect((await rt.api('POST', '/v1/search', { token: two, body: { query: 'x' } })).status).toBe(401);
    expect((await rt.api('POST', '/v1/search', { token: elsewhere, body: { query: 'x' } })).status).toBe(200);
    expect((await rt.state.policies.snapshot('acme')).revokedAgents).toContain('rogue-bot');
  });

  it('a principal delegates to an agent and revokes it: the agent acting for it is denied at once', async () => {
    const alice = await rt.issue({ agentId: 'alice', principal: { id: 'alice', kind: 'person' }, actions: ['search', 'read'] });
    const body = { agentId: 'helper-bot', resources: [maple], purposes: ['support'], actions: ['search', 'read'] };
    const created = await rt.api('POST', '/v1/delegations', { token: alice, body: { ...body, delegationId: 'd-helper' } });
    expect(created.status).toBe(201);
    expect(created.body.delegationId).toBe('d-helper');
    expect((await rt.api('POST', '/v1/delegations', { token: alice, body: { ...body, delegationId: 'd-helper' } })).body.code).toBe('MEM_ID_TAKEN');
    // more than the principal holds, another delegator, or an agent delegating onwards: refused
    expect((await rt.api('POST', '/v1/delegations', { token: alice, body: { ...body, actions: ['write'] } })).body.code).toBe('CAP_ACTION_DENIED');
    expect((await rt.api('POST', '/v1/delegations', { token: alice, body: { ...body, delegatorId: 'bob' } })).body.code).toBe('MEM_IMPERSONATION');
    const helper = await rt.issue({ agentId: 'helper-bot', principal: { id: 'alice', kind: 'person' }, actions: ['search', 'read'] });
    expect((await rt.api('POST', '/v1/delegations', { token: helper, body: { ...body, agentId: 'third-bot' } })).body.code).toBe('CAP_ACTION_DENIED');
    const forBob = await rt.issue({ agentId: 'helper-bot', principal: { id: 'bob', kind: 'person' } });
    expect(await readStatus(helper)).toBe(200);

    expect((await rt.api('POST', '/v1/delegations/d-helper/revoke', { token: helper })).status).toBe(404);
    expect((await rt.api('POST', '/v1/delegations/d-helper/revoke', { token: alice, body: {} })).status).toBe(202);
    expect(await readStatus(helper)).toBe(401);
    expect(await readStatus(forBob)).toBe(200);
    const snapshot = await rt.state.policies.snapshot('acme');
    expect(snapshot.delegations.find((d) => d.delegationId === 'd-helper')).toMatchObject({ delegatorId: 'alice', revoked: true });
  });

  it('places, lists and releases legal holds; the reason never reaches the logs', async () => {
    const placed = await rt.api('POST', '/v1/legal-holds', { token: admin, body: { subjectId: 'cust-42', reason: 'Wombat litigation 2026' } });
    expect(placed.status).toBe(201);
    const holdId = String(placed.body.holdId);
    expect(await rt.state.policies.isOnHold('acme', 'cust-42')).toBe('Wombat litigation 2026');
    const listed = await rt.api('GET', '/v1/legal-holds', { token: admin });
    expect(listed.body.items.map((h) => (h as unknown as { holdId: string }).holdId)).toContain(holdId);
    expect((await rt.api('DELETE', `/v1/legal-holds/${holdId}`, { token: admin })).status).toBe(202);
    expect(await rt.state.policies.isOnHold('acme', 'cust-42')).toBeNull();
    expect((await rt.api('DELETE', `/v1/legal-holds/${holdId}`, { token: admin })).status).toBe(404);
    expect(rt.logs.lines.join('\n')).not.toContain('Wombat');
  });

  it('a policy change makes evidence packets issued under the old revision invalid', async () => {
    const packet = await rt.api('POST', '/v1/search', { token: admin, body: { query: 'invoice' } });
    expect(packet.body.items.map((i) => i.recordId)).toEqual(['adm-1']);
    const validate = () => rt.api('POST', `/v1/packets/${packet.body.packetId}/validate`, { token: admin });
    expect((await validate()).body.valid).toBe(true);
    await rt.api('POST', '/v1/agents/unrelated-bot/revoke', { token: admin });
    expect((await validate()).body.valid).toBe(false);
  });

  it('lists every administration route in /openapi.json', async () => {
    const paths = Object.keys((await rt.api('GET', '/openapi.json')).body.paths as object);
    for (const p of ['/v1/grants', '/v1/grants/{id}', '/v1/delegations', '/v1/delegations/{id}/revoke', '/v1/capabilities/{jti}/revoke',
      '/v1/agents/{id}/revoke', '/v1/legal-holds', '/v1/legal-holds/{id}']) expect(paths).toContain(p);
  });

  it('measures revocation convergence: time from the 202 to the first denied read', async () => {
    const samples: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      const token = await rt.issue({ agentId: `conv-bot-${i}` });
      expect(await readStatus(token)).toBe(200);
      const res = await rt.api('POST', `/v1/capabilities/${jtiOf(token)}/revoke`, { token: admin });
      expect(res.status).toBe(202);
      const accepted = performance.now();
      expect(await readStatus(token)).toBe(401); // the very first read after the 202
      samples.push(performance.now() - accepted);
    }
    samples.sort((a, b) => a - b);
    const at = (q: number) => (samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? 0).toFixed(1);
    process.stdout.write(`revocation convergence (embedded, ${samples.length} revocations): p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${at(1)} ms\n`);
  });

  it('replay rebuilds the identical policy state from policy.changes', async () => {
    const snapshot = await rt.state.policies.snapshot('acme');
    expect(snapshot.revision).toBeGreaterThan(5);
    // one revision per applied change, in every tenant; a change the fold refused (a racing
    // duplicate grant) is on the log but changed nothing
    let revisions = 0;
    for (const tenant of await rt.state.policies.tenants()) revisions += await rt.state.policyRevisions.current(tenant);
    let refused = 0;
    for await (const message of rt.runtime.bus.readAll(TOPICS.policyChanges)) {
      const { tenant, changeId } = (message.value as { metadata: { tenant: string; changeId: string } }).metadata;
      if ((await rt.state.policies.outcomeOf(tenant, changeId))?.refused !== undefined) refused += 1;
    }
    await rt.runtime.close();
    const report = await replayDataDir(rt.dataDir, rt.runtime.config.partitions, undefined, rt.clock);
    expect(report.policyChanges).toBe(revisions + refused);
    expect(report.identical).toBe(true);
    await rt.restart();
    expect(await rt.state.policies.snapshot('acme')).toEqual(snapshot);
  });
});
