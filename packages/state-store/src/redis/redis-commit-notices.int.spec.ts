/**
 * Commit notices over a real Redis (design §9): what one process announces, another that
 * listens to the group hears; nothing crosses groups or deployments; a message on the channel
 * that is not a notice is dropped, never handed on.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { engineEndpoint } from '@gm/testing/engines';
import { createRedisCommitNotices, type CommitNotice } from './redis-commit-notices.ts';

function open(channelPrefix: string) {
  const notices = createRedisCommitNotices({ url: engineEndpoint('redis'), channelPrefix });
  onTestFinished(() => notices.close());
  return notices;
}

describe('Redis commit notices', () => {
  it('hands a notice announced by one process to a listener of its group in another', async () => {
    const prefix = `t:${randomUUID()}:`;
    const announcer = open(prefix);
    const listener = open(prefix);
    const heard: CommitNotice[] = [];
    await listener.listen('gm.projector', (n) => heard.push(n));
    await listener.listen('gm.index-builder', () => {
      throw new Error('a notice of another group was delivered');
    });
    const notice = { group: 'gm.projector', topic: 'memory.events', partition: 3, next: 42 };
    await vi.waitFor(() => {
      announcer.announce(notice);
      expect(heard.length).toBeGreaterThan(0);
    });
    expect(heard[0]).toEqual(notice);
  });

  it('keeps deployments apart by their channel prefix', async () => {
    const mine = open(`t:${randomUUID()}:`);
    const other = open(`t:${randomUUID()}:`);
    const heardMine: CommitNotice[] = [];
    const heardOther: CommitNotice[] = [];
    await mine.listen('g', (n) => heardMine.push(n));
    await other.listen('g', (n) => heardOther.push(n));
    await vi.waitFor(() => {
      mine.announce({ group: 'g', topic: 't', partition: 0, next: 1 });
      expect(heardMine.length).toBeGreaterThan(0);
    });
    expect(heardOther).toEqual([]);
  });

  it('drops what is not a notice and goes on hearing the ones that are', async () => {
    const prefix = `t:${randomUUID()}:`;
    const listener = open(prefix);
    const heard: CommitNotice[] = [];
    await listener.listen('g', (n) => heard.push(n));
    const raw = new Redis(engineEndpoint('redis'));
    onTestFinished(async () => {
      await raw.quit();
    });
    const channel = `${prefix}commits:g`;
    for (const junk of ['not json', '{}', '["t", 0]', '["t", "0", 5]', '["t", 0.5, 5]', '[1, 0, 5]', 'null']) await raw.publish(channel, junk);
    await vi.waitFor(async () => {
      await raw.publish(channel, JSON.stringify(['t', 1, 9]));
      expect(heard.length).toBeGreaterThan(0);
    });
    expect(heard.every((n) => n.group === 'g' && n.topic === 't' && n.partition === 1 && n.next === 9)).toBe(true);
  });

  it('announces without throwing while Redis is away, and stops hearing once closed', async () => {
    const away = createRedisCommitNotices({ url: 'redis://127.0.0.1:1', channelPrefix: 'x:' });
    expect(() => away.announce({ group: 'g', topic: 't', partition: 0, next: 1 })).not.toThrow();
    await away.close();
    const prefix = `t:${randomUUID()}:`;
    const listener = createRedisCommitNotices({ url: engineEndpoint('redis'), channelPrefix: prefix });
    await listener.listen('g', () => undefined);
    await listener.close();
    await expect(listener.listen('g', () => undefined)).rejects.toThrow(/closed/);
  });
});
