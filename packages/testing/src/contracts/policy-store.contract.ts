import { describe, expect, it, onTestFinished } from 'vitest';
import type { Grant, PolicyChange } from '@gm/contracts';
import { StateStore } from '@gm/state-store';
import { eventually } from '../eventually.ts';
import type { KeyValueFactory, KeyValueHarness } from './key-value.contract.ts';

const SHORT_TTL_MS = 100;
const WAIT_LIMIT_MS = 10_000;

let counter = 0;
/** A policy change of `tenant` with a fresh changeId unless one is given. */
export function policyChange<T extends PolicyChange['type']>(
  type: T, data: Extract<PolicyChange, { type: T }>['data'], options: { tenant?: string; changeId?: string } = {},
): PolicyChange {
  counter += 1;
  return {
    type, data,
    metadata: {
      changeId: options.changeId ?? `chg-${counter}`,
      tenant: options.tenant ?? 'acme',
      requestedBy: { agentId: 'admin-desk', principalId: 'carol' },
      occurredAt: '2030-01-01T00:00:00.000Z',
    },
  } as PolicyChange;
}

export const sampleGrant = (overrides: Partial<Grant> = {}): Grant => ({
  grantId: 'g-1', tenant: 'acme', principal: { id: 'alice', kind: 'person' }, resource: { kind: 'project', id: 'maple' },
  role: 'member', purposes: ['support'], restricted: [], ...overrides,
});

/**
 * The policy repository (§6.2) on one key-value adapter: the same specs run on SQLite and
 * on real Redis, so both runtimes project policy.changes with one semantics.
 */
export function testPolicyRepository(adapterName: string, factory: KeyValueFactory): void {
  describe(`policy repository: ${adapterName}`, () => {
    async function open(): Promise<{ harness: KeyValueHarness; state: StateStore; now: () => number }> {
      const harness = await factory();
      onTestFinished(() => harness.cleanup());
      const now = harness.now ?? Date.now;
      return { harness, state: new StateStore(harness.store, 'gm:', now), now };
    }

    it('answers no policy decision from a store whose projection is not loaded (emptied): MEM_UNAVAILABLE, never a denial or a missed revocation', async () => {
      const { state } = await open();
      await state.policies.apply(policyChange('GrantAdded', { grant: sampleGrant() }));
      await state.policies.apply(policyChange('AgentRevoked', { agentId: 'bot' }));
      const closed = { code: 'MEM_UNAVAILABLE', retriable: true };
      await expect(state.policyDecisions.current('acme')).rejects.toMatchObject(closed);
      await expect(state.policyDecisions.isRevoked('acme', 'bot', 'jti-1')).rejects.toMatchObject(closed);
      await state.policyProjection.mark();
      expect(await state.policyProjection.isMarked()).toBe(true);
      expect(await state.policyDecisions.current('acme')).toBe(2);
      expect(await state.policyDecisions.current('globex')).toBe(0);
      expect(await state.policyDecisions.isRevoked('acme', 'bot', 'jti-1')).toBe(true);
      expect(await state.policyDecisions.isRevoked('acme', 'alice', 'jti-1')).toBe(false);
      // A rebuild closes it while it replaces the projection.
      await state.policyProjection.unmark();
      await expect(state.policyDecisions.isRevoked('acme', 'alice', 'jti-1')).rejects.toMatchObject(closed);
    });

    it('applies a change once per changeId and bumps the revision exactly once per applied change', async () => {
      const { state } = await open();
      const added = policyChange('GrantAdded', { grant: sampleGrant() }, { changeId: 'c-1' });
      expect(await state.policies.apply(added)).toEqual({ applied: true, revision: 1 });
      expect(await state.policies.apply(added)).toEqual({ applied: false, revision: 1 });
      expect(await state.policies.apply(policyChange('AgentRevoked', { agentId: 'bot' }, { changeId: 'c-2' }))).toEqual({ applied: true, revision: 2 });
      expect(await state.policies.apply(added)).toEqual({ applied: false, revision: 1 });
      expect(await state.policyRevisions.current('acme')).toBe(2);
      expect(await state.policies.revisionOf('acme', 'c-1')).toBe(1);
      expect(await state.policies.revisionOf('acme', 'c-2')).toBe(2);
      expect(await state.policies.revisionOf('acme', 'never')).toBeNull();
      expect(await state.policyRevisions.current('globex')).toBe(0);
    });

    it('one change applied by two consumers at once (the projector and the deletion-orchestrator) bumps the revision once', async () => {
      const { state } = await open();
      await state.policies.apply(policyChange('LegalHoldPlaced', { hold: { holdId: 'h-1', tenant: 'acme', subjectId: 'cust-1', reason: 'r' } }, { changeId: 'c-0' }));
      const released = policyChange('LegalHoldReleased', { holdId: 'h-1' }, { changeId: 'c-1' });
      const outcomes = await Promise.all([state.policies.apply(released), state.policies.apply(released), state.policies.apply(released)]);
      expect(outcomes.map((o) => o.revision)).toEqual([2, 2, 2]);
      expect(outcomes.filter((o) => o.applied)).toHaveLength(1);
      expect(await state.policyRevisions.current('acme')).toBe(2);
    });

    it('holds a grant id to one grant and keeps the last admin grant of the tenant, whatever reached the log', async () => {
      const { state } = await open();
      const admin = sampleGrant({ grantId: 'g-admin', role: 'admin', resource: { kind: 'tenant', id: 'acme' } });
      expect(await state.policies.apply(policyChange('GrantAdded', { grant: admin }, { changeId: 'c-1' }))).toEqual({ applied: true, revision: 1 });
      // Another grant under the same id is refused and changes nothing; the same grant again changes nothing either.
      const moved = { ...admin, principal: { id: 'mallory', kind: 'person' as const } };
      expect(await state.policies.apply(policyChange('GrantAdded', { grant: moved }, { changeId: 'c-2' }))).toEqual({ applied: true, revision: 1, refused: 'grant-id-taken' });
      expect(await state.policies.outcomeOf('acme', 'c-2')).toEqual({ revision: 1, refused: 'grant-id-taken' });
      expect((await state.policies.grant('acme', 'g-admin'))?.principal.id).toBe(admin.principal.id);
      expect(await state.policies.apply(policyChange('GrantRemoved', { grantId: 'g-admin' }, { changeId: 'c-3' }))).toMatchObject({ refused: 'last-admin' });
      expect(await state.policies.grant('acme', 'g-admin')).not.toBeNull();
      expect(await state.policyRevisions.current('acme')).toBe(1);
      // The same grant under a second id (two racing posts) is refused: the first stands.
      expect(await state.policies.apply(policyChange('GrantAdded', { grant: { ...admin, grantId: 'g-admin-again' } }, { changeId: 'c-3b' }))).toMatchObject({ refused: 'grant-duplicate' });
      expect(await state.policies.grant('acme', 'g-admin-again')).toBeNull();
      // With a second administrator the first may go; the tenant stays administered for good.
      await state.policies.apply(policyChange('GrantAdded', { grant: { ...admin, grantId: 'g-admin-2', principal: { id: 'root', kind: 'person' } } }, { changeId: 'c-4' }));
      expect(await state.policies.apply(policyChange('GrantRemoved', { grantId: 'g-admin' }, { changeId: 'c-5' }))).toEqual({ applied: true, revision: 3 });
      expect(await state.policies.everAdministered('acme', { kind: 'tenant', id: 'acme' })).toBe(true);
      expect(await state.policies.everAdministered('acme', { kind: 'project', id: 'maple' })).toBe(false);
    });

    it('a redelivery after a crash between recording the change and raising the revision raises it once', async () => {
      const { state, harness } = await open();
      const added = policyChange('GrantAdded', { grant: sampleGrant() });
      await state.policies.apply(added);
      await harness.store.set(state.keys.policyRevision('acme'), '0'); // the crash: revision not raised yet
      expect(await state.policies.apply(added)).toEqual({ applied: false, revision: 1 });
      expect(await state.policyRevisions.current('acme')).toBe(1);
      expect((await state.policies.snapshot('acme')).grants).toHaveLength(1);
    });

    it('keeps tenants apart whatever their ids hold: tenant "acme:x"\'s record "y" is not tenant "acme"\'s record "x:y" (one injective key encoding)', async () => {
      const { state } = await open();
      // Claims: each tenant claims its own id for its own subject; neither answers for the other.
      expect(await state.idClaims.claim('acme:x', 'y', 'subject-1')).toBe(true);
      expect(await state.idClaims.claim('acme', 'x:y', 'subject-2')).toBe(true);
      expect(await state.idClaims.owner('acme', 'x:y')).toBe('subject-2');
      // Tombstones: one tenant's deletion hides nothing of the other's.
      await state.tombstones.add('acme:x', ['y']);
      expect((await state.tombstones.filterTombstoned('acme', ['x:y'])).size).toBe(0);
      expect((await state.tombstones.filterTombstoned('acme:x', ['y'])).size).toBe(1);
      // Revoking an agent revokes it in its tenant only.
      await state.policies.apply(policyChange('AgentRevoked', { agentId: 'bot' }, { tenant: 'acme:x' }));
      expect(await state.revocations.isRevoked('acme:x', 'bot', 'jti-1')).toBe(true);
      expect(await state.revocations.isRevoked('acme', 'x:bot', 'jti-1')).toBe(false);
    });

    it('keeps grants per tenant; a removed grant disappears from the snapshot', async () => {
      const { state } = await open();
      await state.policies.apply(policyChange('GrantAdded', { grant: sampleGrant({ grantId: 'g-2', role: 'reviewer' }) }));
      await state.policies.apply(policyChange('GrantAdded', { grant: sampleGrant() }));
      await state.policies.apply(policyChange('GrantAdded', { grant: sampleGrant({ tenant: 'globex' }) }, { tenant: 'globex' }));
      expect((await state.policies.snapshot('acme')).grants.map((g) => [g.grantId, g.role])).toEqual([['g-1', 'member'], ['g-2', 'reviewer']]);
      await state.policies.apply(policyChange('GrantRemoved', { grantId: 'g-1' }));
      const snapshot = await state.policies.snapshot('acme');
      expect(snapshot.grants.map((g) => g.grantId)).toEqual(['g-2']);
      expect(snapshot.revision).toBe(3);
      expect(await state.policies.grant('acme', 'g-1')).toBeNull();
      expect((await state.policies.snapshot('globex')).grants.map((g) => g.grantId)).toEqual(['g-1']);
    });

    it('marks a revoked delegation instead of dropping it, and denies that agent acting for the delegator', async () => {
      const { state } = await open();
      const delegation = {
        delegationId: 'd-1', tenant: 'acme', delegatorId: 'alice', agentId: 'bot',
        resources: [{ kind: 'project' as const, id: 'maple' }], purposes: ['support'], actions: ['search' as const],
      };
      await state.policies.apply(policyChange('DelegationAdded', { delegation }));
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-1', 'alice')).toBe(false);
      await state.policies.apply(policyChange('DelegationRevoked', { delegationId: 'd-1' }));
      expect((await state.policies.snapshot('acme')).delegations).toEqual([{ ...delegation, revoked: true }]);
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-1', 'alice')).toBe(true);
      // the agent acting for someone else, or for itself, is not affected
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-1', 'bob')).toBe(false);
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-1', 'bot')).toBe(false);
      // a new delegation of the same pair lets the agent act again
      await state.policies.apply(policyChange('DelegationAdded', { delegation: { ...delegation, delegationId: 'd-2' } }));
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-1', 'alice')).toBe(false);
      expect((await state.policies.delegations('acme')).map((d) => [d.delegationId, d.revoked])).toEqual([['d-1', true], ['d-2', false]]);
    });

    it('revokes an agent within its tenant only', async () => {
      const { state } = await open();
      await state.policies.apply(policyChange('AgentRevoked', { agentId: 'bot' }));
      expect(await state.revocations.isRevoked('acme', 'bot', 'any-jti')).toBe(true);
      expect(await state.revocations.isRevoked('globex', 'bot', 'any-jti')).toBe(false);
      expect((await state.policies.snapshot('acme')).revokedAgents).toEqual(['bot']);
    });

    it('revokes a capability until its own expiry, and not at all when it has expired already', async () => {
      const { state, harness, now } = await open();
      await state.policies.apply(policyChange('CapabilityRevoked', { jti: 'jti-long', expiresAt: new Date(now() + 15 * 60_000).toISOString() }));
      await state.policies.apply(policyChange('CapabilityRevoked', { jti: 'jti-short', expiresAt: new Date(now() + SHORT_TTL_MS).toISOString() }));
      await state.policies.apply(policyChange('CapabilityRevoked', { jti: 'jti-past', expiresAt: new Date(now() - 1).toISOString() }));
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-long')).toBe(true);
      expect(await state.revocations.revokedCapabilities()).toEqual(expect.arrayContaining(['jti-long']));
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-past')).toBe(false);
      expect(await state.policyRevisions.current('acme')).toBe(3);
      if (harness.advanceClock) await harness.advanceClock(SHORT_TTL_MS + 1);
      await eventually('the short revocation to end with its capability', async () => !(await state.revocations.isRevoked('acme', 'bot', 'jti-short')), WAIT_LIMIT_MS);
      expect(await state.revocations.isRevoked('acme', 'bot', 'jti-long')).toBe(true);
    });

    it('lists legal holds per tenant and answers per subject with the reason, until released', async () => {
      const { state } = await open();
      await state.policies.apply(policyChange('LegalHoldPlaced', { hold: { holdId: 'h-2', tenant: 'acme', subjectId: 'cust-42', reason: 'audit 2030' } }));
      await state.policies.apply(policyChange('LegalHoldPlaced', { hold: { holdId: 'h-1', tenant: 'acme', subjectId: 'cust-42', reason: 'litigation 17' } }));
      await state.policies.apply(policyChange('LegalHoldPlaced', { hold: { holdId: 'h-3', tenant: 'globex', subjectId: 'cust-7', reason: 'x' } }, { tenant: 'globex' }));
      expect((await state.policies.legalHolds('acme')).map((h) => h.holdId)).toEqual(['h-1', 'h-2']);
      expect(await state.policies.isOnHold('acme', 'cust-42')).toBe('litigation 17');
      expect(await state.policies.isOnHold('acme', 'cust-7')).toBeNull();
      expect(await state.policies.isOnHold('globex', 'cust-42')).toBeNull();
      await state.policies.apply(policyChange('LegalHoldReleased', { holdId: 'h-1' }));
      expect(await state.policies.isOnHold('acme', 'cust-42')).toBe('audit 2030');
      await state.policies.apply(policyChange('LegalHoldReleased', { holdId: 'h-2' }));
      expect(await state.policies.isOnHold('acme', 'cust-42')).toBeNull();
      expect(await state.policies.legalHolds('acme')).toEqual([]);
      // releasing an unknown hold changes nothing but is still an applied change
      expect(await state.policies.apply(policyChange('LegalHoldReleased', { holdId: 'nope' }))).toMatchObject({ applied: true, revision: 5 });
    });

    it('two stores that applied the same changes (one with redeliveries) have the same digest', async () => {
      const a = await open();
      const b = await open();
      const changes = [
        policyChange('GrantAdded', { grant: sampleGrant() }),
        policyChange('AgentRevoked', { agentId: 'bot' }),
        policyChange('LegalHoldPlaced', { hold: { holdId: 'h-1', tenant: 'acme', subjectId: 'cust-42', reason: 'r' } }),
        policyChange('GrantRemoved', { grantId: 'g-1' }),
      ];
      for (const c of changes) await a.state.policies.apply(c);
      for (const c of [...changes, ...changes]) await b.state.policies.apply(c);
      expect(await b.state.policies.digest()).toBe(await a.state.policies.digest());
      const before = await a.state.policies.digest();
      await a.state.policies.apply(policyChange('AgentRevoked', { agentId: 'other' }));
      expect(await a.state.policies.digest()).not.toBe(before);
    });

    it('remembers what the issuer signed until the capability expires', async () => {
      const { state, now } = await open();
      const expiresAt = new Date(now() + 60_000).toISOString();
      await state.issuedCapabilities.record({ jti: 'j-1', tenant: 'acme', agentId: 'bot', expiresAt });
      await state.issuedCapabilities.record({ jti: 'j-old', tenant: 'acme', agentId: 'bot', expiresAt: new Date(now() - 1).toISOString() });
      expect(await state.issuedCapabilities.get('j-1')).toEqual({ jti: 'j-1', tenant: 'acme', agentId: 'bot', expiresAt });
      expect(await state.issuedCapabilities.get('j-old')).toBeNull();
    });
  });
}
