import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { afterAll, describe, expect, it } from 'vitest';
import type { CapabilityClaims, PolicySnapshot } from '@gm/contracts';
import { CedarPolicyDecisionPoint } from './cedar-pdp.ts';
import { compilePolicySet, DEFAULT_POLICY_DIR, loadPolicySet, PolicySetError } from './policy-set.ts';

const SCHEMA = readFileSync(join(DEFAULT_POLICY_DIR, 'schema.cedarschema'), 'utf8');
const POLICIES = readFileSync(join(DEFAULT_POLICY_DIR, 'default.cedar'), 'utf8');

const root = mkdtempSync(join(tmpdir(), 'gm-policy-set-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dirs = 0;
/** A deployment's policy directory with these files. */
const policyDir = (files: Record<string, string>): string => {
  const dir = join(root, `set-${++dirs}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
};

/** The message of the PolicySetError that `load` throws; anything else fails the test. */
const failure = (load: () => unknown): string => {
  try {
    load();
  } catch (e) {
    if (e instanceof PolicySetError) return e.message;
    throw e;
  }
  throw new Error('expected a PolicySetError, but the policy set loaded');
};

describe('loadPolicySet', () => {
  it('loads, validates and names the repository\'s default policy set', () => {
    const set = loadPolicySet();
    expect(set.policyIds).toEqual(expect.arrayContaining([
      'member-rights', 'reviewer-rights', 'admin-rights', 'grant-purpose', 'grant-time-bounds',
      'restricted-needs-explicit-grant', 'private-is-owner-only', 'revoked-agent', 'delegation-revoked', 'delegation-bounds',
    ]));
    expect(loadPolicySet(DEFAULT_POLICY_DIR).id).toBe(set.id);
  });

  it('names file, line and the problem for a syntax error', () => {
    const dir = policyDir({
      'schema.cedarschema': SCHEMA,
      'default.cedar': `${POLICIES}\n@id("broken")\npermit (principal, action, resource) when { context.purpose == };\n`,
    });
    const message = failure(() => loadPolicySet(dir));
    const line = POLICIES.split('\n').length + 2;
    expect(message).toContain(`${join(dir, 'default.cedar')}:${line}:`);
    expect(message).toMatch(/unexpected token/);
  });

  it('names the policy and the attribute for a schema violation', () => {
    const dir = policyDir({
      'schema.cedarschema': SCHEMA,
      'default.cedar': `${POLICIES}\n@id("colourful")\npermit (principal, action, resource is Partition) when { resource.colour == "red" };\n`,
    });
    const message = failure(() => loadPolicySet(dir));
    expect(message).toContain('policy "colourful"');
    expect(message).toMatch(/attribute `colour` on entity type `Partition` not found/);
    expect(message).not.toMatch(/policy\d+/);
  });

  it('rejects a role the schema does not know', () => {
    const dir = policyDir({
      'schema.cedarschema': SCHEMA,
      'default.cedar': `@id("owners")\npermit (principal, action, resource) when { context.grant.role == Role::"owner" };\n`,
    });
    expect(failure(() => loadPolicySet(dir))).toMatch(/policy "owners": .*`"owner"` is not declared/);
  });

  it('rejects an unguarded optional attribute (a policy that could error, and so be skipped)', () => {
    const dir = policyDir({
      'schema.cedarschema': SCHEMA,
      'default.cedar': `@id("eager")\nforbid (principal, action, resource) when { context.now >= context.grant.notAfter };\n`,
    });
    const message = failure(() => loadPolicySet(dir));
    expect(message).toMatch(/policy "eager": .*optional attribute `grant.notAfter`/);
    expect(message.split('\n')).toHaveLength(2); // one problem, not one per action

  });

  it('rejects a schema that does not parse, naming the schema file', () => {
    const dir = policyDir({ 'schema.cedarschema': `${SCHEMA}\nentity Broken = {`, 'default.cedar': POLICIES });
    expect(failure(() => loadPolicySet(dir))).toContain(join(dir, 'schema.cedarschema'));
  });

  it('rejects duplicate policy ids and missing files', () => {
    const twice = policyDir({
      'schema.cedarschema': SCHEMA,
      'default.cedar': '@id("same")\npermit (principal, action, resource);\n@id("same")\nforbid (principal, action, resource);\n',
    });
    expect(failure(() => loadPolicySet(twice))).toMatch(/policy "same": duplicate @id/);
    expect(failure(() => loadPolicySet(policyDir({ 'schema.cedarschema': SCHEMA })))).toMatch(/default\.cedar.*file not found/);
  });

  it('accepts a schema in Cedar\'s JSON format', () => {
    const json = cedar.schemaToJson(SCHEMA);
    if (json.type !== 'success') throw new Error('schemaToJson failed');
    const dir = policyDir({ 'schema.cedarschema.json': JSON.stringify(json.json), 'default.cedar': POLICIES });
    expect(loadPolicySet(dir).policyIds).toContain('member-rights');
  });

  it('validates policy texts handed to the PDP directly', () => {
    const make = () => new CedarPolicyDecisionPoint({
      source: { snapshot: async () => { throw new Error('not called'); } },
      clock: { now: () => new Date() },
      policySet: { policies: 'permit (principal, action, resource) when { principal.nickname == "x" };', schema: SCHEMA },
    });
    expect(failure(make)).toMatch(/attribute `nickname` on entity type `Agent` not found/);
  });
});

describe('a deployment\'s own policy set', () => {
  it('replaces the default rules: here, members may search the team partition only', async () => {
    const dir = policyDir({
      'schema.cedarschema': SCHEMA,
      'default.cedar': [
        '@id("team-search-only")',
        'permit (principal, action == Action::"search", resource is Partition)',
        'when {',
        '  resource.visibility == Visibility::"team" && resource.resource == context.grant.resource &&',
        '  context.grant.holder == context.onBehalfOf && context.grant.purposes.contains(context.purpose)',
        '};',
      ].join('\n'),
    });
    const snapshot: PolicySnapshot = {
      tenant: 't1', revision: 1, delegations: [], revokedAgents: [], legalHolds: [],
      grants: [{ grantId: 'g1', tenant: 't1', principal: { id: 'p1', kind: 'person' }, resource: { kind: 'case', id: 'c1' }, role: 'member', purposes: ['support'], restricted: [] }],
    };
    const pdp = new CedarPolicyDecisionPoint({ source: { snapshot: async () => snapshot }, clock: { now: () => new Date() }, policySet: loadPolicySet(dir), validateRequests: true });
    const claims: CapabilityClaims = {
      iss: 'i', aud: 'governed-memory', sub: 'a1', act: { sub: 'p1', kind: 'person' }, tenant: 't1', run: 'r1',
      scopes: [{ kind: 'case', id: 'c1' }], purpose: 'support', actions: ['search', 'read'], exp: 0, iat: 0, rev: 1, jti: 'j1',
    };
    expect(await pdp.authorizedPartitions({ claims, action: 'search' })).toEqual(['t:t1/r:case:c1/v:team']);
    expect(await pdp.authorizedPartitions({ claims, action: 'read' })).toEqual([]);
  });

  it('compiles the same texts to the same preparsed set', () => {
    expect(compilePolicySet({ policies: POLICIES, schema: SCHEMA }).id).toBe(loadPolicySet().id);
  });
});
