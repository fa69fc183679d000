/**
 * The arithmetic of the ingest-gateway's rate limit on the embedded state store (the distributed
 * runtime's Redis is in kafka/gateway-results.int.spec.ts): a batch takes what its principals'
 * windows have left, first come first served, each principal on its own count.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CapabilityClaims } from '@gm/contracts';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { RATE_WINDOW_MS, withinRateLimit } from './rate-limit.ts';

const claimsOf = (tenant: string, principal: string): CapabilityClaims => ({
  iss: 'gm', aud: 'gm', sub: 'scribe', act: { sub: principal, kind: 'person' }, tenant, run: 'run-1',
  scopes: [{ kind: 'project', id: 'maple' }], purpose: 'support', actions: ['write'], exp: 2, iat: 1, rev: 0, jti: `jti-${principal}`,
});

describe('withinRateLimit', () => {
  let fx: EmbeddedFixture;
  beforeEach(async () => {
    fx = await openEmbeddedFixture();
  });
  afterEach(async () => {
    await fx.close();
  });

  it('admits each principal\'s first requests up to what its window has left, over several batches, and counts afresh in the next window', async () => {
    const limit = { perMinute: 3, counters: fx.state.rateCounters };
    const ana = claimsOf('acme', 'ana');
    const bob = claimsOf('acme', 'bob');
    // The same principal id in another tenant is another principal.
    const globexAna = claimsOf('globex', 'ana');
    const now = 10 * RATE_WINDOW_MS;
    expect(await withinRateLimit(limit, now, [ana, bob, ana])).toEqual([true, true, true]);
    expect(await withinRateLimit(limit, now + 1, [ana, ana, bob, globexAna, ana])).toEqual([true, false, true, true, false]);
    expect(await withinRateLimit(limit, now + 2, [bob, bob])).toEqual([true, false]);
    expect(await withinRateLimit(limit, now + RATE_WINDOW_MS, [ana, ana])).toEqual([true, true]);
    expect(await withinRateLimit(limit, now, [])).toEqual([]);
  });
});
