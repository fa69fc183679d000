import { afterEach, describe, expect, it } from 'vitest';
import { GovernedMemoryError, TOPICS, dlqTopic, type PolicyChange, type ServiceHandle } from '@gm/contracts';
import { createLogger } from '@gm/observability';
import { StateStore, type KeyValueStore } from '@gm/state-store';
import { LogSink, openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { policyChange, sampleGrant } from '@gm/testing/contracts/policy-store';
import { POLICY_PROJECTOR_GROUP, startPolicyProjector } from './policy-projector.ts';

let fx: EmbeddedFixture | undefined;
const handles: ServiceHandle[] = [];

afterEach(async () => {
  for (const h of handles.splice(0).reverse()) await h.close();
  await fx?.close();
  fx = undefined;
});

async function setup(state?: (fx: EmbeddedFixture) => StateStore) {
  // Unmarked, as a distributed deployment's new store: the projector decides (see below).
  fx = await openEmbeddedFixture({ partitions: 3, policyLoaded: false });
  const logs = new LogSink();
  const store = state ? state(fx) : fx.state;
  handles.push(await startPolicyProjector({ bus: fx.bus, state: store, log: createLogger({ name: 'policy-int', level: 'info', destination: logs }) }));
  return { fx, logs, state: store };
}

/** Produces and waits until the policy projector committed past the message. */
async function publish(f: EmbeddedFixture, change: PolicyChange | unknown, key?: string): Promise<void> {
  const tenant = (change as PolicyChange).metadata?.tenant ?? 'acme';
  const [position] = await f.bus.produce([{ topic: TOPICS.policyChanges, key: key ?? tenant, value: change }]);
  if (!position) throw new Error('no position');
  expect(await f.bus.waitForCommitted(POLICY_PROJECTOR_GROUP, position, 15_000)).toBe(true);
}

describe('policy projector', () => {
  it('folds policy.changes into the state store; a redelivered change bumps the revision once', async () => {
    const { fx: f, state, logs } = await setup();
    const added = policyChange('GrantAdded', { grant: sampleGrant() });
    await publish(f, added);
    await publish(f, added); // the same change produced twice (a producer retry)
    await publish(f, policyChange('AgentRevoked', { agentId: 'bot' }));
    const snapshot = await state.policies.snapshot('acme');
    expect(snapshot.revision).toBe(2);
    expect(snapshot.grants.map((g) => g.grantId)).toEqual(['g-1']);
    expect(snapshot.revokedAgents).toEqual(['bot']);
    expect(await state.revocations.isRevoked('acme', 'bot', 'jti-x')).toBe(true);
    // ids, types and revisions in the log; never reasons or other content
    const lines = logs.records().filter((r) => r.msg === 'policy change applied');
    expect(lines.map((r) => [r.type, r.revision, r.applied])).toEqual([['GrantAdded', 1, true], ['GrantAdded', 1, false], ['AgentRevoked', 2, true]]);
  });

  it('opens the store to policy decisions when its group folds from the log\'s start; beside a group that had committed, an emptied store stays closed and is alerted', async () => {
    const { fx: f, state } = await setup();
    expect(await state.policyProjection.isMarked()).toBe(true);
    await publish(f, policyChange('GrantAdded', { grant: sampleGrant() }));
    for (const h of handles.splice(0)) await h.close();
    // The store loses its data (Redis emptied); the group's committed offsets stay in the log.
    await state.policyProjection.unmark();
    const logs = new LogSink();
    handles.push(await startPolicyProjector({ bus: f.bus, state, log: createLogger({ name: 'policy-int', level: 'info', destination: logs }) }));
    expect(await state.policyProjection.isMarked()).toBe(false);
    await expect(state.policyDecisions.current('acme')).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    expect(logs.records().map((r) => String(r.msg)).filter((m) => m.startsWith('ALERT'))).toHaveLength(1);
    // New changes are still folded; the store opens only with a rebuild from the log.
    await publish(f, policyChange('AgentRevoked', { agentId: 'bot' }));
    expect(await state.policyProjection.isMarked()).toBe(false);
  });

  it('dead-letters a message that is not a policy change, or not keyed by its tenant, and goes on', async () => {
    const { fx: f, state } = await setup();
    await publish(f, { type: 'GrantAdded', data: { grant: { grantId: 'g-1' } } }, 'acme');
    await publish(f, policyChange('AgentRevoked', { agentId: 'bot' }, { tenant: 'acme' }), 'globex');
    await publish(f, policyChange('LegalHoldPlaced', { hold: { holdId: 'h-1', tenant: 'acme', subjectId: 'cust-42', reason: 'litigation' } }));
    const dead = await f.readTopic(dlqTopic(TOPICS.policyChanges));
    expect(dead).toHaveLength(2);
    for (const d of dead) {
      expect(d.headers['dlq.topic']).toBe(TOPICS.policyChanges);
      expect(d.headers['dlq.group']).toBe(POLICY_PROJECTOR_GROUP);
      expect(d.headers['dlq.offset']).toMatch(/^\d+$/);
    }
    expect(await state.policyRevisions.current('acme')).toBe(1);
    expect(await state.policyRevisions.current('globex')).toBe(0);
    expect(await state.policies.isOnHold('acme', 'cust-42')).toBe('litigation');
  });

  it('retries a state-store outage without limit and applies the change once it is back (no dead letter)', async () => {
    let failures = 0;
    // Down once the projector has started: the outage meets the handler, not the start.
    let down = false;
    const outageCalls = 6; // more than the 5 attempts after which a faulty message is dead-lettered
    const flaky = (kv: KeyValueStore): KeyValueStore =>
      new Proxy(kv, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (typeof value !== 'function' || prop === 'close') return value;
          return (...args: unknown[]) => {
            if (down && failures < outageCalls) {
              failures += 1;
              return Promise.reject(new GovernedMemoryError('MEM_UNAVAILABLE', 'state store down', { retriable: true }));
            }
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    const { fx: f, state } = await setup((fixture) => new StateStore(flaky(fixture.kv), 'gm:', () => fixture.clock.now().getTime()));
    down = true;
    await publish(f, policyChange('GrantAdded', { grant: sampleGrant() }));
    expect(failures).toBe(outageCalls);
    expect(await state.policyRevisions.current('acme')).toBe(1);
    expect(await f.readTopic(dlqTopic(TOPICS.policyChanges))).toEqual([]);
  });
});
