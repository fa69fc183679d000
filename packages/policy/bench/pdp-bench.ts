/**
 * Per-call cost of the Cedar PDP: cold (every decision asks Cedar) against cached decisions,
 * for a capability with 10 scopes (50 candidate partitions).
 * Run: node --import tsx packages/policy/bench/pdp-bench.ts [scopes] [iterations]
 */
import type { CapabilityClaims, Grant, PolicySnapshot, ResourceRef } from '@gm/contracts';
import { CedarPolicyDecisionPoint, loadPolicySet } from '../src/index.ts';

const scopes = Number(process.argv[2] ?? 10);
const iterations = Number(process.argv[3] ?? 200);
const NOW = new Date('2025-03-01T09:00:00.000Z');

const resources: ResourceRef[] = Array.from({ length: scopes }, (_, i) => ({ kind: 'project', id: `p-${i}` }));
const grants: Grant[] = resources.flatMap((resource, i) => [
  { grantId: `g-m-${i}`, tenant: 't1', principal: { id: 'person-ana', kind: 'person' }, resource, role: 'manager', purposes: ['support'], restricted: ['restricted'], notAfter: '2026-01-01T00:00:00Z' },
  { grantId: `g-r-${i}`, tenant: 't1', principal: { id: 'person-ana', kind: 'person' }, resource, role: 'reviewer', purposes: ['support'], restricted: [] },
]);
let revision = 1;
const snapshot = (): PolicySnapshot => ({
  tenant: 't1',
  revision,
  grants,
  delegations: [{ delegationId: 'd1', tenant: 't1', delegatorId: 'person-ana', agentId: 'agent-scout', resources, purposes: ['support'], actions: ['search', 'read'], revoked: false }],
  revokedAgents: [],
  legalHolds: [],
});
const claims: CapabilityClaims = {
  iss: 'bench', aud: 'governed-memory', sub: 'agent-scout', act: { sub: 'person-ana', kind: 'person' }, tenant: 't1', run: 'r1',
  scopes: resources, purpose: 'support', actions: ['search'], exp: 0, iat: 0, rev: 1, jti: 'j1',
};

const pdp = new CedarPolicyDecisionPoint({ source: { snapshot: async () => snapshot() }, clock: { now: () => NOW }, policySet: loadPolicySet() });
const call = () => pdp.authorizedPartitions({ claims, action: 'search' });

const measure = async (label: string, before: () => void): Promise<void> => {
  for (let i = 0; i < 20; i++) { before(); await call(); } // warm-up (JIT, wasm)
  let total = 0n;
  let partitions = 0;
  const requestsBefore = pdp.stats.cedarRequests;
  for (let i = 0; i < iterations; i++) {
    before();
    const start = process.hrtime.bigint();
    partitions = (await call()).length;
    total += process.hrtime.bigint() - start;
  }
  const perCall = Number(total) / iterations / 1e6;
  const cedarCalls = (pdp.stats.cedarRequests - requestsBefore) / iterations;
  const each = cedarCalls === 0 ? '' : `, ${(perCall / cedarCalls * 1000).toFixed(0)} µs each`;
  console.log(`${label.padEnd(7)} ${perCall.toFixed(3)} ms/call  (${partitions} of ${scopes * 5} candidate partitions allowed; ${cedarCalls} Cedar requests a call${each})`);
};

console.log(`Cedar PDP, ${scopes} scopes, ${iterations} iterations, Node ${process.version}`);
await measure('cold', () => { revision += 1; }); // a new revision drops every cached decision
await measure('cached', () => {});
