/** The replay store on the embedded key-value store (on Redis, with two gateway replicas: kafka/producer-proof.int.spec.ts). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { SeenProofs } from './seen-proofs.ts';

describe('seen producer proofs', () => {
  let fx: EmbeddedFixture;
  beforeEach(async () => {
    fx = await openEmbeddedFixture({ partitions: 1 });
  });
  afterEach(async () => fx.close());

  const at = (partition: number, offset: number) => ({ topic: 'memory.ingest', partition, offset });

  it('are a message\'s own when it is read again (a retried batch, a rebalance), another message\'s copy otherwise', async () => {
    const seen = new SeenProofs(fx.state.kv, fx.state.keys.prefix, 120_000);
    expect(await seen.claim([{ jkt: 'k1', jti: 'p-1', at: at(0, 7) }, { jkt: 'k1', jti: 'p-2', at: at(0, 8) }])).toEqual([true, true]);
    expect(await seen.claim([{ jkt: 'k1', jti: 'p-1', at: at(0, 7) }])).toEqual([true]);
    expect(await seen.claim([{ jkt: 'k1', jti: 'p-1', at: at(1, 7) }, { jkt: 'k1', jti: 'p-2', at: at(0, 9) }])).toEqual([false, false]);
    // Proof ids are scoped by the producer's key: another producer's p-1 is its own.
    expect(await seen.claim([{ jkt: 'k2', jti: 'p-1', at: at(0, 10) }])).toEqual([true]);
  });

  it('are forgotten once they can no longer pass the window', async () => {
    const seen = new SeenProofs(fx.state.kv, fx.state.keys.prefix, 120_000);
    expect(await seen.claim([{ jkt: 'k1', jti: 'p-1', at: at(0, 1) }])).toEqual([true]);
    fx.clock.advance(120_001);
    expect(await seen.claim([{ jkt: 'k1', jti: 'p-1', at: at(0, 2) }])).toEqual([true]);
  });
});
