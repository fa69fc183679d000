import type { Producer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { IdempotentProducer } from './kafka-idempotent-producer.ts';

/** Producers told apart by their number, as the broker tells them apart by their producer id. */
function producers() {
  const connected: number[] = [];
  const retired: number[] = [];
  let next = 0;
  const slot = new IdempotentProducer(
    async () => {
      next += 1;
      connected.push(next);
      return { id: next } as unknown as Producer;
    },
    (producer) => void producer.then((p) => retired.push((p as unknown as { id: number }).id)),
  );
  const idOf = (p: Producer): number => (p as unknown as { id: number }).id;
  return { slot, connected, retired, idOf };
}

describe('the idempotent producer', () => {
  it('keeps one producer while sends succeed', async () => {
    const { slot, connected, idOf } = producers();
    const used = [await slot.send(async (p) => idOf(p)), await slot.send(async (p) => idOf(p))];
    expect(used).toEqual([1, 1]);
    expect(connected).toEqual([1]);
  });

  it('never sends again through a producer whose send failed, whatever the failure (its sequence numbers may have landed)', async () => {
    const { slot, connected, retired, idOf } = producers();
    await expect(slot.send(async () => { throw new Error('Request Produce(key: 0, version: 7) timed out'); })).rejects.toThrow('timed out');
    const after = await slot.send(async (p) => idOf(p));
    expect(after).toBe(2);
    expect(connected).toEqual([1, 2]);
    await Promise.resolve();
    expect(retired).toEqual([1]);
  });

  it('replaces it once when sends that shared it fail together', async () => {
    const { slot, connected, idOf } = producers();
    const failing = () => slot.send(async () => { throw new Error('Connection error'); });
    await Promise.allSettled([failing(), failing()]);
    expect(await slot.send(async (p) => idOf(p))).toBe(2);
    expect(connected).toEqual([1, 2]);
  });

  it('tries a new connection after a connect that failed', async () => {
    let attempts = 0;
    const slot = new IdempotentProducer(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('ECONNREFUSED');
      return {} as Producer;
    }, () => undefined);
    await expect(slot.send(async () => 'sent')).rejects.toThrow('ECONNREFUSED');
    await expect(slot.send(async () => 'sent')).resolves.toBe('sent');
    expect(attempts).toBe(2);
  });
});
