import { base64url, decodeJwt, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  GovernedMemoryError, IssueCapabilityRequest, LIMITS,
  type CapabilityClaims, type IssueCapabilityRequest as IssueRequest,
} from '@gm/contracts';
import {
  CAPABILITY_AUDIENCE, CapabilityIssuer, CapabilityVerifier, generateSigningKeyPair, requireAction,
  type RevocationList, type SigningKeyPair,
} from './capabilities.ts';

const ISSUER = 'gm-test-issuer';
const NOW = new Date('2025-03-01T09:00:00.000Z');
const NOW_SEC = NOW.getTime() / 1000;
const MAX_TTL = LIMITS.maxCapabilityTtlSeconds;
const at = (seconds: number): Date => new Date(NOW.getTime() + seconds * 1000);

const request = (overrides: Partial<IssueRequest> = {}): IssueRequest => ({
  tenant: 'tenant-acme',
  agentId: 'agent-scout',
  principal: { id: 'person-ana', kind: 'person' },
  run: 'run-42',
  scopes: [{ kind: 'project', id: 'apollo' }, { kind: 'case', id: 'case-7' }],
  purpose: 'support',
  actions: ['search', 'read'],
  ...overrides,
});

/** The code of the GovernedMemoryError a promise rejects with; anything else fails loudly. */
const codeOf = async (run: () => Promise<unknown>): Promise<string> => {
  try {
    await run();
  } catch (e) {
    return e instanceof GovernedMemoryError ? e.code : `not a GovernedMemoryError: ${String(e)}`;
  }
  return 'resolved';
};

const decodePart = (part: string | undefined): Record<string, unknown> =>
  JSON.parse(new TextDecoder().decode(base64url.decode(part ?? ''))) as Record<string, unknown>;
const encodePart = (value: unknown): string => base64url.encode(JSON.stringify(value));

/** Swaps the payload of a signed token and keeps its header and signature. */
const tamperPayload = (token: string, change: (payload: Record<string, unknown>) => Record<string, unknown>): string => {
  const [header, payload, signature] = token.split('.');
  return [header, encodePart(change(decodePart(payload))), signature].join('.');
};

/** Valid claims (per §6.1) for tokens signed by hand, i.e. not through CapabilityIssuer. */
const claimsAt = (iat: number, lifetime: number): JWTPayload & Record<string, unknown> => ({
  iss: ISSUER,
  aud: CAPABILITY_AUDIENCE,
  sub: 'agent-scout',
  act: { sub: 'person-ana', kind: 'person' },
  tenant: 'tenant-acme',
  run: 'run-42',
  scopes: [{ kind: 'project', id: 'apollo' }],
  purpose: 'support',
  actions: ['search'],
  rev: 1,
  jti: 'cap-hand-signed',
  iat,
  nbf: iat,
  exp: iat + lifetime,
});

class CountingRevocations implements RevocationList {
  calls = 0;
  readonly revokedJtis = new Set<string>();

  async isRevoked(claims: CapabilityClaims): Promise<boolean> {
    this.calls += 1;
    return this.revokedJtis.has(claims.jti);
  }
}

describe('capabilities (§6.1)', () => {
  let keys: SigningKeyPair;
  let otherKeys: SigningKeyPair;
  let issuer: CapabilityIssuer;
  let privateKey: Awaited<ReturnType<typeof importJWK>>;

  const verifier = (revocations?: RevocationList, publicJwk: JWK = keys.publicJwk, issuerName = ISSUER) =>
    CapabilityVerifier.create(publicJwk, issuerName, revocations);

  const handSign = (payload: JWTPayload, header: { alg: string; typ?: string } = { alg: 'EdDSA', typ: 'cap+jwt' }) =>
    new SignJWT(payload).setProtectedHeader(header).sign(privateKey);

  beforeAll(async () => {
    keys = await generateSigningKeyPair();
    otherKeys = await generateSigningKeyPair();
    issuer = await CapabilityIssuer.create(keys.privateJwk, ISSUER);
    privateKey = await importJWK(keys.privateJwk, 'EdDSA');
  });

  describe('issue and verify', () => {
    it('round-trips every claim of a valid token', async () => {
      const { token, jti, expiresAt } = await issuer.issue(request({ ttlSeconds: 300 }), NOW, 7);
      const claims = await (await verifier()).verify(token, at(1));

      expect(claims).toEqual({
        iss: ISSUER,
        aud: CAPABILITY_AUDIENCE,
        sub: 'agent-scout',
        act: { sub: 'person-ana', kind: 'person' },
        tenant: 'tenant-acme',
        run: 'run-42',
        scopes: [{ kind: 'project', id: 'apollo' }, { kind: 'case', id: 'case-7' }],
        purpose: 'support',
        actions: ['search', 'read'],
        rev: 7,
        jti,
        iat: NOW_SEC,
        nbf: NOW_SEC,
        exp: NOW_SEC + 300,
      });
      expect(expiresAt).toBe(at(300).toISOString());
      expect(decodeJwt(token).jti).toBe(jti);
    });

    it('signs with EdDSA and a capability type', async () => {
      const { token } = await issuer.issue(request(), NOW, 1);
      expect(decodePart(token.split('.')[0])).toEqual({ alg: 'EdDSA', typ: 'cap+jwt' });
    });

    it('lets the act claim default to the agent itself when no principal is given', async () => {
      const { principal: _omitted, ...withoutPrincipal } = request();
      const { token } = await issuer.issue(withoutPrincipal, NOW, 1);
      const claims = await (await verifier()).verify(token, NOW);
      expect(claims.act).toEqual({ sub: 'agent-scout', kind: 'agent' });
      expect(claims.sub).toBe('agent-scout');
    });

    it('gives every capability its own jti and uses it as the run when none is given', async () => {
      const { run: _omitted, ...withoutRun } = request();
      const first = await issuer.issue(withoutRun, NOW, 1);
      const second = await issuer.issue(withoutRun, NOW, 1);
      expect(first.jti).not.toBe(second.jti);
      expect((await (await verifier()).verify(first.token, NOW)).run).toBe(first.jti);
    });

    it('removes duplicate actions', async () => {
      const { token } = await issuer.issue(request({ actions: ['read', 'search', 'read'] }), NOW, 1);
      expect((await (await verifier()).verify(token, NOW)).actions).toEqual(['read', 'search']);
    });
  });

  describe('lifetime is at most 15 minutes', () => {
    it('defaults to 15 minutes and caps a longer ttlSeconds at 15 minutes', async () => {
      const byDefault = await issuer.issue({ ...request(), ttlSeconds: undefined }, NOW, 1);
      const askedForAnHour = await issuer.issue(request({ ttlSeconds: 3600 }), NOW, 1);
      for (const { token, expiresAt } of [byDefault, askedForAnHour]) {
        const payload = decodeJwt(token);
        expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(MAX_TTL);
        expect(expiresAt).toBe(at(MAX_TTL).toISOString());
      }
    });

    it('rejects a request for more than 15 minutes at the schema', () => {
      expect(IssueCapabilityRequest.safeParse(request({ ttlSeconds: MAX_TTL })).success).toBe(true);
      expect(IssueCapabilityRequest.safeParse(request({ ttlSeconds: MAX_TTL + 1 })).success).toBe(false);
    });

    it('rejects a token signed with the real key that lives 16 minutes (CAP_INVALID)', async () => {
      const token = await handSign(claimsAt(NOW_SEC, 16 * 60));
      expect(await codeOf(async () => (await verifier()).verify(token, at(1)))).toBe('CAP_INVALID');
      // The same hand-signed token at exactly 15 minutes is fine, so only the lifetime differs.
      const fifteen = await handSign(claimsAt(NOW_SEC, 15 * 60));
      expect((await (await verifier()).verify(fifteen, at(1))).jti).toBe('cap-hand-signed');
    });

    it('does not let a token dated in the future stay usable for longer than 15 minutes (CAP_INVALID)', async () => {
      // iat a day ahead and no nbf: exp - iat is 15 min, yet the token works from now until
      // tomorrow plus 15 min unless the verifier refuses an iat in the future.
      const { nbf: _omitted, ...future } = claimsAt(NOW_SEC + 86_400, MAX_TTL);
      const token = await handSign(future);
      expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
    });

    it('does not let an nbf long before iat widen the usable window past 15 minutes (CAP_INVALID)', async () => {
      // Valid from nbf = now to exp = now + 1h15m: a 75-minute window with exp - iat = 15 min.
      const token = await handSign({ ...claimsAt(NOW_SEC + 3600, MAX_TTL), nbf: NOW_SEC });
      expect(await codeOf(async () => (await verifier()).verify(token, at(60)))).toBe('CAP_INVALID');
    });
  });

  describe('time', () => {
    it('rejects a token at and after exp (CAP_EXPIRED) and accepts it one second before', async () => {
      const { token } = await issuer.issue(request({ ttlSeconds: 60 }), NOW, 1);
      expect((await (await verifier()).verify(token, at(59))).jti).toBeTruthy();
      expect(await codeOf(async () => (await verifier()).verify(token, at(60)))).toBe('CAP_EXPIRED');
      expect(await codeOf(async () => (await verifier()).verify(token, at(3600)))).toBe('CAP_EXPIRED');
    });

    it('does not let the cache extend the life of a token verified earlier (CAP_EXPIRED)', async () => {
      const { token } = await issuer.issue(request({ ttlSeconds: 60 }), NOW, 1);
      const v = await verifier();
      await v.verify(token, at(1));
      await v.verify(token, at(59));
      expect(await codeOf(() => v.verify(token, at(60)))).toBe('CAP_EXPIRED');
      expect(await codeOf(() => v.verify(token, at(61)))).toBe('CAP_EXPIRED');
    });

    it('rejects a token before its nbf (CAP_NOT_YET_VALID)', async () => {
      const { token } = await issuer.issue(request(), NOW, 1);
      expect(await codeOf(async () => (await verifier()).verify(token, at(-1)))).toBe('CAP_NOT_YET_VALID');
      const later = await handSign({ ...claimsAt(NOW_SEC, MAX_TTL), nbf: NOW_SEC + 120 });
      expect(await codeOf(async () => (await verifier()).verify(later, at(60)))).toBe('CAP_NOT_YET_VALID');
    });

    it('checks nbf again for a cached token presented at an earlier time (CAP_NOT_YET_VALID)', async () => {
      const { token } = await issuer.issue(request(), NOW, 1);
      const v = await verifier();
      await v.verify(token, at(10));
      expect(await codeOf(() => v.verify(token, at(-10)))).toBe('CAP_NOT_YET_VALID');
    });
  });

  describe('signature, algorithm, audience and issuer', () => {
    it('rejects a token signed by another key (CAP_INVALID)', async () => {
      const forger = await CapabilityIssuer.create(otherKeys.privateJwk, ISSUER);
      const { token } = await forger.issue(request(), NOW, 1);
      expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
    });

    it.each([
      ['the tenant is changed', (p: Record<string, unknown>) => ({ ...p, tenant: 'tenant-victim' })],
      ['an action is added', (p: Record<string, unknown>) => ({ ...p, actions: ['search', 'read', 'admin'] })],
      ['a scope is added', (p: Record<string, unknown>) => ({ ...p, scopes: [{ kind: 'workspace', id: 'secrets' }] })],
      ['exp is pushed out', (p: Record<string, unknown>) => ({ ...p, exp: NOW_SEC + 60 })],
      ['the principal is swapped', (p: Record<string, unknown>) => ({ ...p, act: { sub: 'person-boss', kind: 'person' } })],
    ])('rejects a token whose payload was tampered with: %s (CAP_INVALID)', async (_name, change) => {
      const { token } = await issuer.issue(request({ ttlSeconds: 30 }), NOW, 1);
      const v = await verifier();
      await v.verify(token, NOW); // the genuine token is cached; the forgery must not ride on it
      expect(await codeOf(() => v.verify(tamperPayload(token, change), at(1)))).toBe('CAP_INVALID');
    });

    it('rejects a token whose header was changed (CAP_INVALID)', async () => {
      const { token } = await issuer.issue(request(), NOW, 1);
      const [, payload, signature] = token.split('.');
      const retyped = [encodePart({ alg: 'EdDSA', typ: 'JWT' }), payload, signature].join('.');
      expect(await codeOf(async () => (await verifier()).verify(retyped, NOW))).toBe('CAP_INVALID');
    });

    it('rejects an unsigned token with alg "none" (CAP_INVALID)', async () => {
      const payload = encodePart(claimsAt(NOW_SEC, 60));
      for (const header of [{ alg: 'none' }, { alg: 'none', typ: 'cap+jwt' }, { alg: 'None' }]) {
        const token = `${encodePart(header)}.${payload}.`;
        expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
      }
    });

    it('rejects an HS256 token keyed with the public key bytes (CAP_INVALID)', async () => {
      const secrets = [
        base64url.decode(keys.publicJwk.x ?? ''),
        new TextEncoder().encode(keys.publicJwk.x ?? ''),
        new TextEncoder().encode(JSON.stringify(keys.publicJwk)),
      ];
      for (const secret of secrets) {
        const token = await new SignJWT(claimsAt(NOW_SEC, 60)).setProtectedHeader({ alg: 'HS256', typ: 'cap+jwt' }).sign(secret);
        expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
      }
    });

    it('rejects a token for another audience (CAP_INVALID)', async () => {
      for (const aud of ['another-service', ['another-service'], '']) {
        const token = await handSign({ ...claimsAt(NOW_SEC, 60), aud });
        expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
      }
      const { aud: _omitted, ...noAudience } = claimsAt(NOW_SEC, 60);
      expect(await codeOf(async () => (await verifier()).verify(await handSign(noAudience), NOW))).toBe('CAP_INVALID');
    });

    it('rejects a token from another issuer (CAP_INVALID)', async () => {
      const stranger = await CapabilityIssuer.create(keys.privateJwk, 'someone-else');
      const { token } = await stranger.issue(request(), NOW, 1);
      expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
      const { token: ours } = await issuer.issue(request(), NOW, 1);
      expect(await codeOf(async () => (await verifier(undefined, keys.publicJwk, 'someone-else')).verify(ours, NOW))).toBe('CAP_INVALID');
    });

    it.each([
      ['empty', ''],
      ['a.b.c', 'a.b.c'],
      ['two dots only', '..'],
      ['not a JWT', 'Bearer hello'],
      ['very long', `${'A'.repeat(200_000)}.${'B'.repeat(200_000)}.${'C'.repeat(200_000)}`],
      ['JSON', JSON.stringify({ tenant: 'tenant-acme' })],
    ])('rejects a garbage string (%s) with CAP_INVALID', async (_name, garbage) => {
      expect(await codeOf(async () => (await verifier()).verify(garbage, NOW))).toBe('CAP_INVALID');
    });
  });

  describe('claims', () => {
    it('rejects a correctly signed token without a tenant (CAP_INVALID)', async () => {
      const { tenant: _omitted, ...noTenant } = claimsAt(NOW_SEC, 60);
      expect(await codeOf(async () => (await verifier()).verify(await handSign(noTenant), NOW))).toBe('CAP_INVALID');
    });

    it('rejects a correctly signed token with an unknown action (CAP_INVALID)', async () => {
      const token = await handSign({ ...claimsAt(NOW_SEC, 60), actions: ['search', 'superuser'] });
      expect(await codeOf(async () => (await verifier()).verify(token, NOW))).toBe('CAP_INVALID');
    });

    it.each([
      ['no jti', 'jti', undefined],
      ['no sub', 'sub', undefined],
      ['no iat', 'iat', undefined],
      ['no exp', 'exp', undefined],
      ['no actions', 'actions', []],
      ['no scopes', 'scopes', []],
      ['a tenant id with a slash', 'tenant', 'tenant-acme/r:project:apollo'],
      ['a negative policy revision', 'rev', -1],
    ])('rejects a correctly signed token with %s (CAP_INVALID)', async (_name, claim, value) => {
      const payload: Record<string, unknown> = { ...claimsAt(NOW_SEC, 60) };
      if (value === undefined) delete payload[claim];
      else payload[claim] = value;
      expect(await codeOf(async () => (await verifier()).verify(await handSign(payload), NOW))).toBe('CAP_INVALID');
    });
  });

  describe('revocation (§7)', () => {
    it('rejects a revoked token even after it was verified and cached (CAP_REVOKED)', async () => {
      const revocations = new CountingRevocations();
      const v = await verifier(revocations);
      const { token, jti } = await issuer.issue(request(), NOW, 1);
      await v.verify(token, NOW);
      revocations.revokedJtis.add(jti);
      expect(await codeOf(() => v.verify(token, at(1)))).toBe('CAP_REVOKED');
    });

    it('rejects a token revoked before its first use (CAP_REVOKED)', async () => {
      const revocations = new CountingRevocations();
      const { token, jti } = await issuer.issue(request(), NOW, 1);
      revocations.revokedJtis.add(jti);
      expect(await codeOf(async () => (await verifier(revocations)).verify(token, NOW))).toBe('CAP_REVOKED');
    });

    it('asks the revocation list on every call, cached or not', async () => {
      const revocations = new CountingRevocations();
      const v = await verifier(revocations);
      const { token } = await issuer.issue(request(), NOW, 1);
      for (let i = 1; i <= 3; i += 1) {
        await v.verify(token, at(i));
        expect(revocations.calls).toBe(i);
      }
    });

    it('revokes only the revoked capability', async () => {
      const revocations = new CountingRevocations();
      const v = await verifier(revocations);
      const revoked = await issuer.issue(request(), NOW, 1);
      const kept = await issuer.issue(request(), NOW, 1);
      revocations.revokedJtis.add(revoked.jti);
      expect(await codeOf(() => v.verify(revoked.token, NOW))).toBe('CAP_REVOKED');
      expect((await v.verify(kept.token, NOW)).jti).toBe(kept.jti);
    });
  });

  describe('requireAction', () => {
    it('passes for a granted action and denies a missing one (CAP_ACTION_DENIED)', async () => {
      const { token } = await issuer.issue(request({ actions: ['search', 'read'] }), NOW, 1);
      const claims = await (await verifier()).verify(token, NOW);
      expect(() => requireAction(claims, 'search')).not.toThrow();
      expect(() => requireAction(claims, 'read')).not.toThrow();
      for (const action of ['write', 'admin', 'revoke'] as const) {
        expect(await codeOf(async () => requireAction(claims, action))).toBe('CAP_ACTION_DENIED');
      }
    });
  });
});
