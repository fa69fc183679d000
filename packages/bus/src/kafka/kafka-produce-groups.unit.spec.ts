import { describe, expect, it } from 'vitest';
import type { LogPosition } from '../port.ts';
import type { EncodedMessage } from './kafka-codec.ts';
import { PartitionProduceGroups } from './kafka-produce-groups.ts';

const message = (value: string): EncodedMessage => ({ topic: 't', key: 'k', value, headers: {} });

/** A partition log double: appends each send as one batch and records what was sent together. */
function fakeLog() {
  const sends: string[][] = [];
  let end = 0;
  const send = async (messages: EncodedMessage[]): Promise<LogPosition[]> => {
    sends.push(messages.map((m) => m.value));
    return messages.map(() => ({ topic: 't', partition: 0, offset: end++ }));
  };
  return { sends, send };
}

describe('PartitionProduceGroups', () => {
  it('sends the produces of one turn to one partition as one batch, each caller getting its own positions', async () => {
    const log = fakeLog();
    const groups = new PartitionProduceGroups(log.send);
    const [a, b] = await Promise.all([groups.add('t/0', [message('a1'), message('a2')]), groups.add('t/0', [message('b1')])]);
    expect(log.sends).toEqual([['a1', 'a2', 'b1']]);
    expect(a.map((p) => p.offset)).toEqual([0, 1]);
    expect(b.map((p) => p.offset)).toEqual([2]);
  });

  it('keeps partitions apart, and splits a group at the byte bound without reordering', async () => {
    const log = fakeLog();
    const groups = new PartitionProduceGroups(log.send, 10);
    await Promise.all([
      groups.add('t/0', [message('xxxx')]), groups.add('t/1', [message('yy')]), groups.add('t/0', [message('zzzz')]), groups.add('t/0', [message('wwwwwwwwwwww')]),
    ]);
    // Partitions go independently; within one, in call order.
    expect(log.sends.filter((values) => !values.includes('yy'))).toEqual([['xxxx', 'zzzz'], ['wwwwwwwwwwww']]);
    expect(log.sends).toContainEqual(['yy']);
  });

  it('has one request in flight per partition: calls made meanwhile go together in the next', async () => {
    const sends: string[][] = [];
    let release: () => void = () => undefined;
    const firstHeld = new Promise<void>((resolve) => (release = resolve));
    let end = 0;
    const groups = new PartitionProduceGroups(async (messages) => {
      sends.push(messages.map((m) => m.value));
      if (sends.length === 1) await firstHeld;
      return messages.map(() => ({ topic: 't', partition: 0, offset: end++ }));
    });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const a = groups.add('t/0', [message('a')]);
    await turn();
    const b = groups.add('t/0', [message('b')]);
    const c = groups.add('t/0', [message('c')]);
    await turn();
    // Two requests at once would take consecutive sequence numbers, and a failed first one rolls
    // the producer's count back under the second (OUT_OF_ORDER_SEQUENCE_NUMBER while leaders move).
    expect(sends).toEqual([['a']]);
    release();
    const positions = await Promise.all([a, b, c]);
    expect(sends).toEqual([['a'], ['b', 'c']]);
    expect(positions.map((p) => p.map((x) => x.offset))).toEqual([[0], [1], [2]]);
  });

  it('fails every call of a failed batch, and only those', async () => {
    const groups = new PartitionProduceGroups(async (messages) => {
      if (messages.some((m) => m.value === 'bad')) throw new Error('broker down');
      return messages.map((_, offset) => ({ topic: 't', partition: 1, offset }));
    });
    const results = await Promise.allSettled([groups.add('t/0', [message('bad')]), groups.add('t/0', [message('ok')]), groups.add('t/1', [message('fine')])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
  });

  it('idle sends what was added and waits for it', async () => {
    const log = fakeLog();
    const groups = new PartitionProduceGroups(log.send);
    const sent = groups.add('t/0', [message('last')]);
    await groups.idle();
    expect(log.sends).toEqual([['last']]);
    expect((await sent).map((p) => p.offset)).toEqual([0]);
  });
});
