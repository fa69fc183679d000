import { describe, expect, it } from 'vitest';
import { CapabilityIssuer, generateSigningKeyPair } from '@gm/policy';
import { decodeCapability } from './capability.ts';

describe('the capability as the console shows it', () => {
  it('reads the claims of an issued capability: tenant, agent, principal, purpose, actions, expiry', async () => {
    const issuer = await CapabilityIssuer.create((await generateSigningKeyPair()).privateJwk, 'test');
    const now = new Date('2026-12-01T10:00:00.000Z');
    const { token } = await issuer.issue({
      tenant: 'acme', agentId: 'review-desk', principal: { id: 'bob', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }],
      purpose: 'support', actions: ['review', 'promote'], ttlSeconds: 600,
    }, now, 0);
    expect(decodeCapability(token)).toMatchObject({
      ok: true,
      view: {
        tenant: 'acme', agentId: 'review-desk', principal: { id: 'bob', kind: 'person' }, purpose: 'support',
        actions: ['review', 'promote'], scopes: ['project:maple'], exp: now.getTime() / 1000 + 600,
      },
    });
  });

  it('refuses what is not a capability, the issuer credential first', () => {
    for (const text of ['issuer-credential-0123456789abcdef-xyz', '', 'a.b', 'e30.e30.sig', 'x.%%%.y']) {
      expect(decodeCapability(text).ok).toBe(false);
    }
  });
});
